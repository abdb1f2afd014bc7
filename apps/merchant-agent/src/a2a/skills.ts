import type { AgentSkill, Message, Part } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { forecastFor } from '../paid-http/forecast';
import type { MerchantConfig } from '../merchant.config';
import { dataPart, textPart } from './task-events';

export const SKILLS = Symbol('SKILLS');

/** When a paid skill's payment is settled: before the work, or after it (a failed work then costs nothing). */
export type SettleTiming = 'before-work' | 'after-work';

export interface Skill {
  id: string;
  /** what the card says about it, besides its id */
  card: Pick<AgentSkill, 'name' | 'description' | 'tags' | 'examples' | 'outputModes'>;
  /** atomic units of the merchant's price asset, and when they are settled; unset: the skill is free */
  paid?: { amount: string; settleTiming: SettleTiming };
  /** what the skill takes when the buyer names none */
  defaultInput: string;
  run(input: string): { name: string; part: Part };
}

export interface SkillRequest {
  skill: Skill;
  input: string;
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
      card: { name: 'Ping', description: 'Answers pong. Free: for checking the connection.', tags: ['health'], examples: ['ping'], outputModes: ['text/plain'] },
      defaultInput: '',
      run: () => ({ name: 'pong', part: textPart('pong') }),
    },
  ];
  return new Map(skills.map((skill) => [skill.id, skill]));
}

/**
 * What a message asks for: its first text part is `<skill> [input]`, e.g. `forecast Porto`. Anything else is
 * malformed input (-32602), named precisely, before any task exists.
 */
export function parseSkillRequest(message: Message, skills: ReadonlyMap<string, Skill>): SkillRequest {
  const offered = [...skills.keys()].join(', ');
  const text = message.parts.find((part) => part.content?.$case === 'text')?.content?.value;
  const [name = '', ...rest] = typeof text === 'string' ? text.trim().split(/\s+/) : [];
  const skill = skills.get(name.toLowerCase());
  if (!skill) {
    throw new RequestMalformedError(
      name ? `unknown skill "${name}": this agent offers ${offered}` : `send a text part "<skill> [input]" naming one of ${offered}`,
    );
  }
  const input = rest.join(' ') || skill.defaultInput;
  if (input.length > MAX_INPUT_LENGTH) throw new RequestMalformedError(`the input of ${skill.id} is longer than ${MAX_INPUT_LENGTH} characters`);
  return { skill, input };
}
