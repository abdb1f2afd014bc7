import { formatUnits, stripeCurrencyDecimals } from '@mp/money';
import type { AssetInfo } from '../model';

/** What is known about an asset for display: given info first, Stripe's currency rules for `stripe/<currency>`. */
export function assetInfo(asset: string, known: ReadonlyMap<string, AssetInfo>): AssetInfo | undefined {
  const given = known.get(asset);
  if (given) return given;
  const currency = /^stripe\/([a-z]{3})$/.exec(asset)?.[1];
  if (!currency) return undefined;
  return { asset, symbol: currency.toUpperCase(), decimals: stripeCurrencyDecimals(currency) };
}

/** `1.5 USDC`, or the atomic units when the asset's decimals are unknown. Exact: no floats. */
export function formatAmount(amount: bigint, info: AssetInfo | undefined): string {
  if (!info) return `${amount} units`;
  return `${formatUnits(amount, info.decimals)} ${info.symbol}`;
}

/** `USDC on eip155:31337`, `USD (Stripe)`, or the asset id itself. */
export function assetLabel(asset: string, info: AssetInfo | undefined): string {
  if (!info) return asset;
  if (asset.startsWith('stripe/')) return `${info.symbol} (Stripe)`;
  return `${info.symbol} on ${asset.slice(0, asset.indexOf('/'))}`;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** `2026-12-01 08:00:00 UTC` */
export function formatTime(at: Date): string {
  return `${at.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
