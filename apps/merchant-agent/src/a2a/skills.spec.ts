import { Role, type Message } from '@a2a-js/sdk';
import type { MerchantConfig } from '../merchant.config';
import { parseSkillRequest, skillCatalog } from './skills';
import { textPart } from './task-events';

const config = { price: { network: 'eip155:31337', asset: '0xasset', amount: '10000' }, a2a: { haikuPrice: '5000' } } as unknown as MerchantConfig;
const skills = skillCatalog(config);
const message = (...texts: string[]): Message => ({
  messageId: 'm-1',
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: texts.map(textPart),
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

describe('parseSkillRequest', () => {
  it('reads "<skill> [input]" from the first text part, with the skill\'s default input', () => {
    expect(parseSkillRequest(message('  Forecast   Porto de Mós '), skills)).toMatchObject({ skill: { id: 'forecast' }, input: 'Porto de Mós' });
    expect(parseSkillRequest(message('haiku'), skills)).toMatchObject({ skill: { id: 'haiku', paid: { amount: '5000', settleTiming: 'after-work' } }, input: 'the sea' });
    expect(parseSkillRequest(message('ping'), skills).skill.paid).toBeUndefined();
  });

  it('refuses what names no skill of this agent, as malformed input', () => {
    expect(() => parseSkillRequest(message('dance'), skills)).toThrow('unknown skill "dance": this agent offers forecast, haiku, ping');
    expect(() => parseSkillRequest(message(), skills)).toThrow('send a text part "<skill> [input]"');
    expect(() => parseSkillRequest(message(`haiku ${'x'.repeat(101)}`), skills)).toThrow('longer than 100 characters');
  });
});
