/** The most words the metered word count counts (and so charges) in one call. */
export const WORDCOUNT_MAX_UNITS = 50;

/** The metered work the agent sells from prepaid balances (A2A skill and MCP tool): words counted, each one a unit. */
export function countWords(text: string): { words: number; units: number } {
  const words = Math.min(text.split(/\s+/).filter(Boolean).length, WORDCOUNT_MAX_UNITS);
  return { words, units: Math.max(words, 1) };
}
