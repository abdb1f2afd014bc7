/** The report page's only stylesheet, inlined: the page must open offline and from a file. */
export const REPORT_CSS = `
:root{--fg:#1d2330;--muted:#5b6474;--line:#dde2ea;--bg:#f6f7f9;--good:#1f7a4d;--bad:#b42318;--volume:#4c78a8;--breaks:#e45756}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:1120px;margin:0 auto;padding:16px 24px}
header{padding-top:28px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 10px}
h3{font-size:15px;margin:18px 0 8px}
.meta,.note,footer{color:var(--muted)}
.status{display:inline-block;margin:8px 0 0;padding:4px 12px;border-radius:999px;font-weight:600}
.status.clean{background:#e3f4ea;color:var(--good)}
.status.broken{background:#fde8e6;color:var(--bad)}
.cards{list-style:none;display:flex;flex-wrap:wrap;gap:10px;margin:0;padding:0}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:140px}
.card .count{display:block;font-size:22px;font-weight:700}
.card .label{color:var(--muted)}
.card.good .count{color:var(--good)}
.card.bad{border-color:#f3b5ae}
.card.bad .count{color:var(--bad)}
table{width:100%;border-collapse:collapse;background:#fff;border:1px solid var(--line);border-radius:8px}
th,td{padding:6px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
td.advice{overflow-wrap:anywhere;min-width:160px}
thead th{background:#eef1f5;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.bad{color:var(--bad);font-weight:600}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all;overflow-wrap:anywhere}
.kind{font-weight:600;white-space:nowrap}
.kind.missing_in_ledger,.kind.missing_externally,.kind.amount_mismatch,.kind.duplicate,.kind.over_refund,.kind[class*=" channel_"],.kind[class*=" prepaid_"]{color:var(--bad)}
figure{margin:0 0 16px;background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px}
figcaption{color:var(--muted);text-align:center}
svg{width:100%;height:auto;display:block}
svg .volume{fill:var(--volume)}
svg .breaks{fill:var(--breaks)}
svg .axis{stroke:#9aa3b2}
svg .grid{stroke:var(--line);stroke-dasharray:3 3}
svg text{font-size:11px;fill:var(--muted)}
svg text.x{text-anchor:middle}
svg text.y{text-anchor:end}
.legend .swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;border-radius:2px}
.legend .swatch.volume{background:var(--volume)}
.legend .swatch.breaks{background:var(--breaks)}
`;
