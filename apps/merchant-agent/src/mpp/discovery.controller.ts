import { Controller, Get, Header, Inject } from '@nestjs/common';
import { MERCHANT_CONFIG, type MerchantConfig } from '../merchant.config';
import { MPP_FORECAST_ROUTE } from './mpp-paywall';
import { MPP_TOP_UP_ROUTE, mppTerms } from './mpp-terms';
import { ApiDoc } from '@mp/platform';
import { DISCOVERY_DOCS } from './discovery.openapi';
import { MPP_BRIEFING_ROUTE } from '../subscriptions/subscription-paywall';

/**
 * GET /openapi.json: the payment discovery document (draft-payment-discovery): `x-service-info` at the root and
 * `x-payment-info` on each paid operation. Advisory only; the 402's challenges are what a client pays.
 */
@Controller()
export class DiscoveryController {
  constructor(@Inject(MERCHANT_CONFIG) private readonly config: MerchantConfig) {}

  @ApiDoc(DISCOVERY_DOCS.document)
  @Get('openapi.json')
  @Header('Cache-Control', 'max-age=300')
  document() {
    const offers = mppTerms(this.config, '').offers.map((offer) => ({
      intent: offer.intent,
      method: offer.method,
      amount: String(offer.request.amount),
      currency: String(offer.request.currency),
      description:
        offer.method === 'evm'
          ? `${offer.request.amount} atomic units of the token on ${this.config.price.network}`
          : `${offer.request.amount} minor units of ${String(offer.request.currency).toUpperCase()} through Stripe`,
    }));
    const subscription = this.config.subscription;
    const briefing = subscription && {
      [MPP_BRIEFING_ROUTE]: {
        get: {
          summary: `${subscription.product}, sold by subscription (MPP subscription intent); a subscriber proves itself with Payer-Proof`,
          'x-payment-info': {
            offers: [
              {
                intent: 'subscription',
                method: 'evm',
                amount: subscription.amount,
                currency: this.config.price.asset,
                description: `${subscription.amount} atomic units of the token on ${this.config.price.network} every ${subscription.period.count} ${subscription.period.unit}(s)`,
              },
            ],
          },
          responses: {
            '200': { description: 'Subscribed (Payment-Receipt with subscriptionId) or entitled: the briefing' },
            '402': {
              description: 'Payment required: a WWW-Authenticate: Payment challenge of intent subscription',
              headers: { 'WWW-Authenticate': { schema: { type: 'string' } } },
              content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
            },
          },
        },
      },
    };
    const prepaid = this.config.prepaid;
    const topUp = prepaid && {
      [MPP_TOP_UP_ROUTE]: {
        post: {
          summary: 'Top up your prepaid balance for the metered A2A skill and MCP tool (MPP evm charge)',
          'x-payment-info': {
            offers: [
              {
                intent: 'charge',
                method: 'evm',
                amount: prepaid.topUpAmount,
                currency: this.config.price.asset,
                description: `${prepaid.topUpAmount} atomic units of the token on ${this.config.price.network}, credited to the payer's balance`,
              },
            ],
          },
          requestBody: {
            required: false,
            content: {
              'application/json': {
                schema: { type: 'object', additionalProperties: false },
              },
            },
          },
          responses: {
            '200': { description: 'Credited: the balance; the Payment-Receipt header carries the receipt' },
            '402': {
              description: 'Payment required: a WWW-Authenticate: Payment challenge (evm charge)',
              headers: { 'WWW-Authenticate': { schema: { type: 'string' } } },
              content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
            },
          },
        },
      },
    };
    return {
      openapi: '3.1.0',
      info: { title: 'Merchant agent', version: '0.1.0', description: 'A sample merchant selling forecasts to machines over x402, MPP and A2A.' },
      'x-service-info': { categories: ['weather', 'data'], docs: { apiReference: '/openapi.json', homepage: '/' } },
      paths: {
        [MPP_FORECAST_ROUTE]: {
          post: {
            summary: 'A machine-readable forecast, paid with MPP (evm or stripe charge)',
            'x-payment-info': { offers },
            requestBody: {
              required: false,
              content: { 'application/json': { schema: { type: 'object', properties: { city: { type: 'string' } }, additionalProperties: false } } },
            },
            responses: {
              '200': {
                description: 'The forecast; the Payment-Receipt header carries the receipt',
                headers: { 'Payment-Receipt': { schema: { type: 'string' }, description: 'base64url JSON receipt' } },
                content: { 'application/json': { schema: { $ref: '#/components/schemas/Forecast' } } },
              },
              '402': {
                description: 'Payment required: one WWW-Authenticate: Payment challenge per accepted method',
                headers: { 'WWW-Authenticate': { schema: { type: 'string' } } },
                content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
              },
            },
          },
        },
        ...topUp,
        ...briefing,
      },
      components: {
        schemas: {
          Forecast: {
            type: 'object',
            required: ['location', 'issuedAt', 'hours'],
            properties: {
              location: { type: 'string' },
              issuedAt: { type: 'string', format: 'date-time' },
              hours: { type: 'array', items: { type: 'object', properties: { in: { type: 'integer' }, tempC: { type: 'number' }, sky: { type: 'string' } } } },
            },
          },
          Problem: {
            type: 'object',
            required: ['type', 'title', 'status'],
            properties: {
              type: { type: 'string', format: 'uri' },
              title: { type: 'string' },
              status: { type: 'integer' },
              detail: { type: 'string' },
              challengeId: { type: 'string' },
            },
          },
        },
      },
    };
  }
}
