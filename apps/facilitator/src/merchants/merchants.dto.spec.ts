import { problemValidationPipe, ProblemError } from '@mp/platform';
import { PaymentPath, PaymentsQuery, ReceivingAddressDto, SetWebhookDto, UpdateMerchantSettingsDto } from './merchants.dto';

const ADDRESS = '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2';

async function refusal(value: unknown, metatype: new () => object, type: 'body' | 'query' | 'param' = 'body') {
  const error = await problemValidationPipe()
    .transform(value, { type, metatype })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(error).toBeInstanceOf(ProblemError);
  return { detail: (error as ProblemError).message, invalidParams: (error as ProblemError).extensions.invalidParams };
}

describe('merchant self-service DTOs through the global validation pipe', () => {
  it('names an unknown field, and a field of the wrong type, with its reason', async () => {
    expect(await refusal({ allowAnyPayTo: 'yes', colour: 'red' }, UpdateMerchantSettingsDto)).toEqual({
      detail: 'invalid field(s): allowAnyPayTo, colour',
      invalidParams: [
        { name: 'allowAnyPayTo', reason: 'must be true or false' },
        { name: 'colour', reason: 'unknown field' },
      ],
    });
    expect((await refusal(undefined, UpdateMerchantSettingsDto)).invalidParams).toEqual([{ name: 'allowAnyPayTo', reason: 'must be true or false' }]);
    expect((await refusal([true], UpdateMerchantSettingsDto)).invalidParams).toEqual([{ name: '(body)', reason: 'must be a JSON object' }]);
    expect((await refusal({}, SetWebhookDto)).invalidParams).toEqual([{ name: 'webhookUrl', reason: 'must be an http(s) URL or null' }]);
  });

  it('checks a receiving address as the settlement does: network, zero address, checksum', async () => {
    expect(
      await problemValidationPipe().transform({ network: 'eip155:8453', address: ADDRESS.toLowerCase() }, { type: 'body', metatype: ReceivingAddressDto }),
    ).toEqual({
      network: 'eip155:8453',
      address: ADDRESS.toLowerCase(),
    });
    expect((await refusal({ network: 'base', address: `0x${'0'.repeat(40)}` }, ReceivingAddressDto)).invalidParams).toEqual([
      { name: 'network', reason: 'must be a CAIP-2 EVM network id, e.g. eip155:8453' },
      { name: 'address', reason: 'the zero address cannot receive payments' },
    ]);
    const typo = `${ADDRESS.slice(0, -1)}3`;
    expect((await refusal({ network: 'eip155:8453', address: typo }, ReceivingAddressDto)).invalidParams).toEqual([
      { name: 'address', reason: expect.stringMatching(/wrong EIP-55 checksum/) },
    ]);
  });

  it('turns the page size into a number, and names bad query and path parameters as such', async () => {
    expect(await problemValidationPipe().transform({ limit: '25', state: 'confirmed' }, { type: 'query', metatype: PaymentsQuery })).toEqual({
      limit: 25,
      state: 'confirmed',
    });
    expect(await refusal({ limit: '101', state: 'lost', sort: 'asc' }, PaymentsQuery, 'query')).toEqual({
      detail: 'invalid query parameter(s): state, limit, sort',
      invalidParams: [
        { name: 'state', reason: expect.stringMatching(/^must be one of /) },
        { name: 'limit', reason: 'must be an integer from 1 to 100' },
        { name: 'sort', reason: 'unknown query parameter' },
      ],
    });
    expect(await refusal({ id: 'nope' }, PaymentPath, 'param')).toEqual({
      detail: 'invalid path parameter(s): id',
      invalidParams: [{ name: 'id', reason: 'must be a payment id (a UUID)' }],
    });
  });
});
