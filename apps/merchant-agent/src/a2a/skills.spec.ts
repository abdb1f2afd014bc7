import { Role, type Message, type Part } from '@a2a-js/sdk';
import type { MerchantConfig } from '../merchant.config';
import { inputProblem, routeMessage, skillCatalog, skillMenu, type SkillRoute } from './skills';
import { dataPart, textPart } from './task-events';

const config = { price: { network: 'eip155:31337', asset: '0xasset', amount: '10000' }, a2a: { haikuPrice: '5000' } } as unknown as MerchantConfig;
const skills = skillCatalog(config);
const message = (parts: (string | Part)[], metadata?: Record<string, unknown>): Message => ({
  messageId: 'm-1',
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: parts.map((part) => (typeof part === 'string' ? textPart(part) : part)),
  metadata,
  extensions: [],
  referenceTaskIds: [],
});
const route = (...args: Parameters<typeof message>) => routeMessage(message(...args), skills);
/** A route's outcome in short: [skill, input, how] or ['choose', skills listed]. */
const brief = (r: SkillRoute) => (r.kind === 'skill' ? [r.skill.id, r.input, r.matchedBy] : ['choose', r.among.map((s) => s.id)]);

describe('routeMessage', () => {
  it('keeps "<skill> [input]": a text that starts with a skill id, any case and spacing, with the skill\'s default input', () => {
    expect(brief(route(['  Forecast   Porto de Mós ']))).toEqual(['forecast', 'Porto de Mós', 'leading-id']);
    expect(brief(route(['haiku']))).toEqual(['haiku', 'the sea', 'leading-id']);
    // the leading id wins over another skill named later in the text
    expect(brief(route(['haiku about a weather forecast']))).toEqual(['haiku', 'about a weather forecast', 'leading-id']);
  });

  it('takes metadata.skillId first, over whatever the text says, with the input after "on:"', () => {
    const natural = 'Please run skill forecast (Weather forecast) on: hello';
    expect(brief(route([natural], { skillId: 'forecast' }))).toEqual(['forecast', 'hello', 'metadata']);
    expect(brief(route(['write a haiku on: rain'], { skillId: 'FORECAST' }))).toEqual(['forecast', 'rain', 'metadata']);
    expect(brief(route(['Porto'], { skillId: 'forecast' }))).toEqual(['forecast', 'Porto', 'metadata']);
    expect(brief(route([], { skillId: 'haiku' }))).toEqual(['haiku', 'the sea', 'metadata']);
  });

  it('takes metadata.skillId on a data part, then a data part naming the skill (skillId or skill), with its input', () => {
    const tagged: Part = { ...dataPart({ city: 'x' }), metadata: { skillId: 'haiku' } };
    expect(brief(route(['forecast Porto', tagged]))).toEqual(['haiku', 'forecast Porto', 'metadata']);
    expect(brief(route([dataPart({ skillId: 'forecast', input: 'Faro' })]))).toEqual(['forecast', 'Faro', 'data']);
    expect(brief(route(['something on: autumn', dataPart({ skill: 'haiku' })]))).toEqual(['haiku', 'autumn', 'data']);
    // metadata before the data part
    expect(brief(route([dataPart({ skill: 'haiku' })], { skillId: 'ping' }))).toEqual(['ping', '', 'metadata']);
  });

  it('finds a skill id, then a name, then an example anywhere in the text, as whole words only', () => {
    const natural = 'Please run skill forecast (Weather forecast) on: hello';
    expect(brief(route([natural]))).toEqual(['forecast', 'hello', 'id']);
    expect(brief(route(['Could I get a FORECAST for Lisbon?']))).toEqual(['forecast', 'Could I get a for Lisbon?', 'id']);
    expect(brief(route(['I would like a weather   forecast']))).toEqual(['forecast', 'I would like a', 'id']);
    // by name: "Weather forecast" is the forecast skill's name; no id appears as a whole word
    const renamed = new Map([...skills].map(([id, skill]) => (id === 'forecast' ? ['wx', { ...skill, id: 'wx' }] : [id, skill])));
    expect(brief(routeMessage(message(['please, a Weather Forecast thing']), renamed))).toEqual(['wx', 'please, a thing', 'name']);
    // by example: "forecast Lisbon" is the wx skill's example
    expect(brief(routeMessage(message(['forecast Lisbon please']), renamed))).toEqual(['wx', 'forecast Lisbon please', 'example']);
    // "pinging" and "haikus" are not the words "ping" and "haiku"
    expect(brief(route(['pinging haikus around']))).toEqual(['choose', ['forecast', 'haiku', 'ping']]);
    expect(brief(route(['just send one over, on: ping']))).toEqual(['choose', ['forecast', 'haiku', 'ping']]);
  });

  it('asks which skill when the text names several, none, or an unknown id: never an error', () => {
    const ambiguous = route(['a haiku or a forecast, please']);
    expect(brief(ambiguous)).toEqual(['choose', ['forecast', 'haiku']]);
    expect(ambiguous).toMatchObject({ why: 'This message names more than one skill (forecast, haiku)' });
    expect(route(['hello there'])).toMatchObject({ kind: 'choose', why: 'This message names no skill of this agent' });
    expect(route([])).toMatchObject({ kind: 'choose', why: 'This message has no text and names no skill' });
    expect(route(['forecast Porto'], { skillId: 'dance' })).toMatchObject({
      kind: 'choose',
      why: 'Its metadata.skillId names "dance", which is not a skill of this agent',
    });
    expect(route([dataPart({ skill: 42 })])).toMatchObject({ kind: 'choose', why: 'Its data part names 42, which is not a skill of this agent' });
  });

  it('flags an input longer than 100 characters, pointing at "on:"', () => {
    const long = route([`haiku ${'x'.repeat(101)}`]);
    expect(long.kind === 'skill' && inputProblem(long)).toMatch(/^the input of haiku is longer than 100 characters/);
    const fine = route(['haiku autumn']);
    expect(fine.kind === 'skill' && inputProblem(fine)).toBeUndefined();
  });
});

describe('skillMenu', () => {
  it('lists the skills it asks about with their prices, and how to name one', () => {
    const menu = skillMenu(route(['hello']) as Extract<SkillRoute, { kind: 'choose' }>, config.price);
    expect(menu.text).toBe(
      'Which skill? This message names no skill of this agent. This agent offers forecast (Weather forecast): 10000 atomic units of 0xasset on eip155:31337; ' +
        'haiku (Haiku): 5000 atomic units of 0xasset on eip155:31337; ping (Ping): free. Name one in the text (e.g. "forecast Lisbon", or "forecast on: <input>"), or set metadata.skillId.',
    );
    expect(menu.skills).toEqual([
      { id: 'forecast', name: 'Weather forecast', price: { amount: '10000', asset: '0xasset', network: 'eip155:31337' }, examples: ['forecast Lisbon'] },
      { id: 'haiku', name: 'Haiku', price: { amount: '5000', asset: '0xasset', network: 'eip155:31337' }, examples: ['haiku autumn rain'] },
      { id: 'ping', name: 'Ping', price: null, examples: ['ping'] },
    ]);
  });
});
