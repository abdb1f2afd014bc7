import type { AgentSkill, Message, Part } from '@a2a-js/sdk';
import { forecastFor } from '../paid-http/forecast';
import { countWords, WORDCOUNT_MAX_UNITS } from '../prepaid/wordcount';
import type { MerchantConfig } from '../merchant.config';
import { dataPart, textPart } from './task-events';

export const SKILLS = Symbol('SKILLS');

/** The message metadata that names the payer of a metered call: {payer, deadline, signature} (@mp/chain spendMessage). */
export const PREPAID_PROOF_KEY = 'mp.prepaid.proof';

/** When a paid skill's payment is settled: before the work, or after it (a failed work then costs nothing). */
export type SettleTiming = 'before-work' | 'after-work';

export interface Skill {
  id: string;
  /** what the card says about it, besides its id */
  card: Pick<AgentSkill, 'name' | 'description' | 'tags' | 'examples' | 'outputModes'>;
  /** atomic units of the merchant's price asset, and when they are settled; unset: the skill is free */
  paid?: { amount: string; settleTiming: SettleTiming };
  /** the skill sells the subscription (MPP `subscription` intent through input-required, SubscriptionFlow) */
  subscription?: { amount: string; periodUnit: string; periodCount: number };
  /** the skill sells prepaid credit: its x402 payment is credited to the payer's balance in the ledger (PaymentFlow) */
  topUp?: boolean;
  /** the skill is paid from the caller's prepaid balance, `unitPrice` per unit of work, at most `maxUnits` (PrepaidFlow) */
  metered?: { unitPrice: string; maxUnits: number };
  /** what the skill takes when the buyer names none */
  defaultInput: string;
  /** the work; a metered skill says how many units it did */
  run(input: string): { name: string; part: Part; units?: number };
}

const MAX_INPUT_LENGTH = 100;

/** The skills this agent sells. `forecast` costs the merchant's price (as the paid HTTP route does), `haiku` its own. */
export function skillCatalog(config: MerchantConfig): ReadonlyMap<string, Skill> {
  const { network, asset } = config.price;
  const priced = (amount: string, timing: SettleTiming) =>
    `Paid with x402 (a2a-x402 extension): ${amount} atomic units of ${asset} on ${network}, settled ${timing === 'before-work' ? 'before' : 'after'} the work.`;
  const skills: Skill[] = [
    {
      id: 'forecast',
      card: {
        name: 'Weather forecast',
        description: `A machine-readable forecast for the next three hours of a city (default Lisbon). ${priced(config.price.amount, 'before-work')}`,
        tags: ['weather', 'forecast', 'x402'],
        examples: ['forecast Lisbon'],
        outputModes: ['application/json'],
      },
      paid: { amount: config.price.amount, settleTiming: 'before-work' },
      defaultInput: 'Lisbon',
      run: (city) => ({ name: 'forecast', part: dataPart(forecastFor(city)) }),
    },
    {
      id: 'haiku',
      card: {
        name: 'Haiku',
        description: `A haiku on a topic of your choice. ${priced(config.a2a.haikuPrice, 'after-work')}`,
        tags: ['poetry', 'haiku', 'x402'],
        examples: ['haiku autumn rain'],
        outputModes: ['text/plain'],
      },
      paid: { amount: config.a2a.haikuPrice, settleTiming: 'after-work' },
      defaultInput: 'the sea',
      run: (topic) => ({ name: 'haiku', part: textPart(`${topic}, once more —\nthe ledger takes one more line,\nthe block seals it in`) }),
    },
    {
      id: 'ping',
      card: {
        name: 'Ping',
        description: 'Answers pong. Free: for checking the connection.',
        tags: ['health'],
        examples: ['ping'],
        outputModes: ['text/plain'],
      },
      defaultInput: '',
      run: () => ({ name: 'pong', part: textPart('pong') }),
    },
  ];
  const prepaid = config.prepaid;
  if (prepaid) {
    skills.push(
      {
        id: 'top-up',
        card: {
          name: 'Top up',
          description: `Adds ${prepaid.topUpAmount} atomic units of ${asset} on ${network} to your prepaid balance, for the metered skills. ${priced(prepaid.topUpAmount, 'before-work')}`,
          tags: ['prepaid', 'x402'],
          examples: ['top-up'],
          outputModes: ['application/json'],
        },
        paid: { amount: prepaid.topUpAmount, settleTiming: 'before-work' },
        topUp: true,
        defaultInput: '',
        run: () => ({ name: 'balance', part: dataPart({ topUp: prepaid.topUpAmount }) }),
      },
      {
        id: 'wordcount',
        card: {
          name: 'Word count',
          description:
            `Counts the words of a text. Metered: ${prepaid.unitPrice} atomic units of ${asset} per word, paid from your prepaid balance (top it up with the top-up skill): no payment per call. ` +
            `Name yourself with ${PREPAID_PROOF_KEY}: {payer, deadline, signature}, your EIP-191 signature over \`mp-prepaid:spend:a2a:wordcount:<messageId>:<deadline>\`.`,
          tags: ['text', 'metered', 'prepaid'],
          examples: ['wordcount on: the quick brown fox'],
          outputModes: ['application/json'],
        },
        metered: { unitPrice: prepaid.unitPrice, maxUnits: WORDCOUNT_MAX_UNITS },
        defaultInput: 'hello',
        run: (text) => {
          const { words, units } = countWords(text);
          return { name: 'wordcount', part: dataPart({ words, text }), units };
        },
      },
    );
  }
  const subscription = config.subscription;
  if (subscription) {
    const { unit, count } = subscription.period;
    const covered = subscription.skills.length ? ` Subscribers are served ${subscription.skills.join(', ')} without paying per call.` : '';
    skills.push({
      id: 'subscribe',
      card: {
        name: 'Subscribe',
        description:
          `A subscription to ${subscription.product}: ${subscription.amount} atomic units of ${asset} on ${network} every ${count} ${unit}(s), paid with the MPP subscription intent. ` +
          `The task waits in input-required with mpp.payment.required (the challenges); answer on the task with mpp.payment.credential; it completes with mpp.payment.receipt (subscriptionId).${covered} ` +
          'A subscriber names itself on those skills with mpp.subscription.proof: {payer, deadline, signature}, its EIP-191 signature over `mp-subscription:access:<product>:a2a:<skill>:<deadline>`.',
        tags: ['subscription', 'mpp'],
        examples: ['subscribe'],
        outputModes: ['application/json'],
      },
      subscription: { amount: subscription.amount, periodUnit: unit, periodCount: count },
      defaultInput: '',
      run: () => ({ name: 'subscription', part: dataPart({ product: subscription.product }) }),
    });
  }
  return new Map(skills.map((skill) => [skill.id, skill]));
}

/** How a message named its skill, strongest first. */
export type RouteMatch = 'metadata' | 'data' | 'leading-id' | 'id' | 'name' | 'example';

/**
 * What a message asks for: a skill and its input, or a question back (input-required) listing the skills it may
 * choose from, with why (it named none, an unknown one, or several).
 */
export type SkillRoute = { kind: 'skill'; skill: Skill; input: string; matchedBy: RouteMatch } | { kind: 'choose'; among: Skill[]; why: string };

/** Where the skill is named outside the text: message metadata (or a data part's metadata), or a data part's own fields. */
const SKILL_ID_KEY = 'skillId';
/** "…on: <input>": what follows is the input; the skill is looked for only in what precedes it. */
const INPUT_MARKER = /(?<![\p{L}\p{N}_])on:/iu;

/**
 * Routes a message to one of `skills` (pure; no error for a message that names none):
 * 1. `metadata.skillId` of the message, or of one of its data parts;
 * 2. a data part `{ "skillId": … }` or `{ "skill": … }` (optionally with `"input"`);
 * 3. its text: first a text that starts with a skill id (`forecast Porto`), then a skill id, then a skill name,
 *    then an example, found anywhere as whole words, case-insensitively. Text naming two skills at the same rank
 *    is ambiguous.
 * The input is a data part's `input`, else the text after "on:", else the text without the skill's id and name
 * (the rest after the id for `<skill> [input]`), else the skill's default.
 */
export function routeMessage(message: Message, skills: ReadonlyMap<string, Skill>): SkillRoute {
  const all = [...skills.values()];
  const text = message.parts
    .map((part) => (part.content?.$case === 'text' ? part.content.value : undefined))
    .filter((value): value is string => typeof value === 'string')
    .join('\n')
    .trim();
  const data = message.parts.filter((part) => part.content?.$case === 'data');
  const dataFields = data.map((part) => part.content?.value as unknown).filter(isRecord);
  const dataInput = dataFields.map((fields) => fields.input).find((value): value is string => typeof value === 'string' && value.trim() !== '');

  const named = [
    { by: 'metadata' as const, id: message.metadata?.[SKILL_ID_KEY], where: 'Its metadata.skillId' },
    ...data.map((part) => ({ by: 'metadata' as const, id: part.metadata?.[SKILL_ID_KEY], where: 'The metadata.skillId of its data part' })),
    ...dataFields.map((fields) => ({ by: 'data' as const, id: fields[SKILL_ID_KEY] ?? fields.skill, where: 'Its data part' })),
  ].find((candidate) => candidate.id !== undefined && candidate.id !== null && candidate.id !== '');
  if (named) {
    const skill = typeof named.id === 'string' ? skills.get(named.id.trim().toLowerCase()) : undefined;
    if (!skill) return { kind: 'choose', among: all, why: `${named.where} names ${JSON.stringify(named.id)}, which is not a skill of this agent` };
    return { kind: 'skill', skill, matchedBy: named.by, input: dataInput ?? inputOf(text, skill) };
  }

  const marker = INPUT_MARKER.exec(text);
  const instruction = marker ? text.slice(0, marker.index) : text;
  const [first = ''] = instruction.split(/\s+/);
  const leading = skills.get(first.toLowerCase());
  if (leading) return { kind: 'skill', skill: leading, matchedBy: 'leading-id', input: dataInput ?? inputOf(text, leading) };

  const ranks: { by: RouteMatch; phrases: (skill: Skill) => string[] }[] = [
    { by: 'id', phrases: (skill) => [skill.id] },
    { by: 'name', phrases: (skill) => (skill.card.name ? [skill.card.name] : []) },
    { by: 'example', phrases: (skill) => skill.card.examples ?? [] },
  ];
  for (const { by, phrases } of ranks) {
    const found = all.filter((skill) => phrases(skill).some((phrase) => wordsPattern(phrase).test(instruction)));
    if (found.length === 1) return { kind: 'skill', skill: found[0], matchedBy: by, input: dataInput ?? inputOf(text, found[0]) };
    if (found.length > 1) return { kind: 'choose', among: found, why: `This message names more than one skill (${found.map((skill) => skill.id).join(', ')})` };
  }
  return { kind: 'choose', among: all, why: text ? 'This message names no skill of this agent' : 'This message has no text and names no skill' };
}

/** A skill's input longer than this is refused (it is echoed in the offer and the output). */
export function inputProblem(route: Extract<SkillRoute, { kind: 'skill' }>): string | undefined {
  if (route.input.length > MAX_INPUT_LENGTH)
    return `the input of ${route.skill.id} is longer than ${MAX_INPUT_LENGTH} characters: send it after "on:", e.g. "${route.skill.id} on: Porto"`;
  return undefined;
}

/** What the agent asks a message that named no skill (or several): the skills with their prices, and how to name one. */
export function skillMenu(route: Extract<SkillRoute, { kind: 'choose' }>, price: MerchantConfig['price']): { text: string; skills: SkillListing[] } {
  const listed = route.among.map((skill) => ({
    id: skill.id,
    name: skill.card.name ?? skill.id,
    price: skill.paid ? { amount: skill.paid.amount, asset: price.asset, network: price.network } : null,
    ...(skill.subscription && { subscription: { ...skill.subscription, asset: price.asset, network: price.network } }),
    ...(skill.metered && { metered: { unitPrice: skill.metered.unitPrice, asset: price.asset, network: price.network } }),
    examples: skill.card.examples ?? [],
  }));
  const cost = (s: SkillListing) =>
    s.metered
      ? `${s.metered.unitPrice} atomic units of ${s.metered.asset} on ${s.metered.network} per unit, from your prepaid balance`
      : s.subscription
        ? `${s.subscription.amount} atomic units of ${s.subscription.asset} on ${s.subscription.network} every ${s.subscription.periodCount} ${s.subscription.periodUnit}(s)`
        : s.price
          ? `${s.price.amount} atomic units of ${s.price.asset} on ${s.price.network}`
          : 'free';
  const lines = listed.map((s) => `${s.id} (${s.name}): ${cost(s)}`);
  const [example] = listed;
  const text =
    `Which skill? ${route.why}. This agent offers ${lines.join('; ')}. ` +
    `Name one in the text (e.g. "${example?.examples[0] ?? example?.id ?? ''}", or "${example?.id ?? ''} on: <input>"), or set metadata.skillId.`;
  return { text, skills: listed };
}

export interface SkillListing {
  id: string;
  name: string;
  /** null: free (or sold by subscription) */
  price: { amount: string; asset: string; network: string } | null;
  /** what the subscribe skill charges per period */
  subscription?: { amount: string; periodUnit: string; periodCount: number; asset: string; network: string };
  /** what a metered skill takes from the prepaid balance per unit */
  metered?: { unitPrice: string; asset: string; network: string };
  examples: string[];
}

/** The skill's input from the text: after "on:", else the text without the skill's id and name; empty: the default. */
function inputOf(text: string, skill: Skill): string {
  const marker = INPUT_MARKER.exec(text);
  const input = marker
    ? text.slice(marker.index + marker[0].length)
    : [skill.id, skill.card.name ?? '']
        .filter(Boolean)
        .sort((a, b) => b.length - a.length) // the name first: it may contain the id
        .reduce((rest, phrase) => rest.replace(wordsPattern(phrase, 'g'), ' '), text)
        .replace(/\(\s*\)|\[\s*\]/g, ' ');
  return input.replace(/\s+/g, ' ').trim() || skill.defaultInput;
}

/** `phrase` as whole words (letters and digits do not continue it on either side), case-insensitive, any spacing. */
function wordsPattern(phrase: string, flags = ''): RegExp {
  const words = phrase
    .trim()
    .split(/\s+/)
    .map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`(?<![\\p{L}\\p{N}_])${words.join('\\s+')}(?![\\p{L}\\p{N}_])`, `iu${flags}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
