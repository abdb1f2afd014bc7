import type { AssetInfo } from '../model';
import type { HistoryPoint } from '../history';
import { escapeHtml as e, formatAmount } from './format';

const WIDTH = 760;
const HEIGHT = 220;
const LEFT = 96;
const RIGHT = 44;
const TOP = 14;
const BOTTOM = 34;
const MAX_LABELS = 8;

/**
 * An inline SVG bar chart of one asset's history: payment volume (blue, left axis) and breaks (red, right axis) per
 * bucket, each bar with a tooltip. Heights are scaled from bigints without floats overflowing.
 */
export function historyChart(points: HistoryPoint[], label: string, info: AssetInfo | undefined): string {
  const plotWidth = WIDTH - LEFT - RIGHT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const band = plotWidth / Math.max(1, points.length);
  const maxVolume = points.reduce((max, p) => (p.volume > max ? p.volume : max), 0n);
  const maxBreaks = Math.max(0, ...points.map((p) => p.breaks));
  const volumeHeight = (v: bigint) => (maxVolume === 0n ? 0 : (Number((v * 10_000n) / maxVolume) / 10_000) * plotHeight);
  const breaksHeight = (n: number) => (maxBreaks === 0 ? 0 : (n / maxBreaks) * plotHeight);
  const bucket = points[0]?.bucket ?? 'day';
  const daily = bucket === 'day' || bucket === 'week';
  const at = (p: HistoryPoint) => (daily ? p.start.toISOString().slice(0, 10) : p.start.toISOString().slice(0, 16).replace('T', ' '));
  const bottom = TOP + plotHeight;

  const bars = points.map((p, i) => {
    const x = LEFT + i * band;
    const vh = volumeHeight(p.volume);
    const bh = breaksHeight(p.breaks);
    const tip = `${at(p)}: ${formatAmount(p.volume, info)} in ${p.rows} row(s), ${p.breaks} break(s)`;
    return (
      `<g><title>${e(tip)}</title>` +
      `<rect class="volume" x="${n(x + band * 0.1)}" y="${n(bottom - vh)}" width="${n(band * 0.45)}" height="${n(vh)}"/>` +
      `<rect class="breaks" x="${n(x + band * 0.58)}" y="${n(bottom - bh)}" width="${n(band * 0.3)}" height="${n(bh)}"/></g>`
    );
  });
  const step = Math.max(1, Math.ceil(points.length / MAX_LABELS));
  const labels = points
    .map((p, i) => (i % step === 0 ? `<text class="x" x="${n(LEFT + i * band + band / 2)}" y="${HEIGHT - 12}">${e(at(p).slice(5))}</text>` : ''))
    .join('');
  const title = `${label}: payment volume and breaks per ${bucket}`;
  return [
    `<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${e(title)}" xmlns="http://www.w3.org/2000/svg">`,
    `<line class="axis" x1="${LEFT}" y1="${bottom}" x2="${WIDTH - RIGHT}" y2="${bottom}"/>`,
    `<line class="grid" x1="${LEFT}" y1="${TOP}" x2="${WIDTH - RIGHT}" y2="${TOP}"/>`,
    `<text class="y volume-label" x="${LEFT - 6}" y="${TOP + 4}">${e(formatAmount(maxVolume, info))}</text>`,
    `<text class="y volume-label" x="${LEFT - 6}" y="${bottom}">0</text>`,
    `<text class="y2 breaks-label" x="${WIDTH - RIGHT + 6}" y="${TOP + 4}">${maxBreaks}</text>`,
    `<text class="y2 breaks-label" x="${WIDTH - RIGHT + 6}" y="${bottom}">0</text>`,
    ...bars,
    labels,
    '</svg>',
  ].join('');
}

function n(value: number): string {
  return value.toFixed(1);
}
