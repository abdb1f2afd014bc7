import { randomUUID } from 'node:crypto';
import { Controller, Get, Inject, Logger, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { MppFacilitatorError, type MppFacilitatorClient } from '@mp/clients';
import { encodeNeedVoucherEvent, PAYMENT_RECEIPT_EVENT, PAYMENT_RECEIPT_HEADER, toProblemDetails } from '@mp/mpp';
import { ApiDoc, problemBody } from '@mp/platform';
import { MERCHANT_CONFIG, type MerchantConfig } from '../../merchant.config';
import { forecastHour } from '../../paid-http/forecast';
import { mppFacilitator, paymentCredentials, relay, withoutChallenges } from '../mpp-paywall';
import { FORECAST_STREAM_DOCS } from './forecast-stream.openapi';
import { FORECAST_STREAM_ROUTE, sessionTerms } from './session-terms';
import { VoucherSignals } from './voucher-signals';

const MAX_HOURS = 168;
/** how often a stream waiting for a voucher asks the facilitator again (a voucher relayed by another instance) */
const VOUCHER_POLL_MS = 1_000;
const SSE_HEADERS = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', Connection: 'keep-alive' };

/**
 * The metered forecast stream, paid through an MPP evm session (mppx's session transport on EVM): GET with
 * `Accept: text/event-stream` opens (402 → open credential → the stream); every forecast hour is charged to the
 * channel through the facilitator (spent recorded) BEFORE it is written; when the accepted vouchers do not cover the
 * next hour the stream sends `payment-need-voucher` and waits for the voucher, which the client POSTs to the same URL
 * (with top-ups and the final close). The stream ends with `event: payment-receipt`.
 */
@Controller()
export class ForecastStreamController {
  private readonly logger = new Logger(ForecastStreamController.name);
  private readonly facilitator: MppFacilitatorClient;

  constructor(
    @Inject(MERCHANT_CONFIG) private readonly config: MerchantConfig,
    private readonly signals: VoucherSignals,
  ) {
    this.facilitator = mppFacilitator(config);
  }

  @ApiDoc(FORECAST_STREAM_DOCS.stream)
  @Get(FORECAST_STREAM_ROUTE)
  async stream(@Req() req: Request, @Res() res: Response): Promise<void> {
    const hours = hoursOf(req.query.hours);
    if (hours === undefined) {
      relay(res, 400, problemBody('validation_failed', `hours: must be an integer from 1 to ${MAX_HOURS}`, req.originalUrl), []);
      return;
    }
    const city = typeof req.query.city === 'string' && req.query.city.length > 0 && req.query.city.length <= 100 ? req.query.city : 'Lisbon';
    const settled = await this.settleCredential(req, res);
    if (!settled) return;

    const channelId = String(settled.receipt.channelId ?? settled.receipt.reference);
    // one stream's charges share a key: a stream replayed with the same Idempotency-Key is not charged again
    const streamKey = headerValue(req, 'idempotency-key') ?? randomUUID();
    let receipt: Record<string, unknown> = settled.receipt;
    let gone = false;
    req.on('close', () => (gone = true));
    res.writeHead(200, { ...SSE_HEADERS, [PAYMENT_RECEIPT_HEADER]: settled.paymentReceipt });

    const price = this.config.mpp.session.unitPrice;
    for (let hour = 1; hour <= hours && !gone;) {
      const chargeId = `${streamKey}:${hour}`.slice(0, 200);
      let charged;
      try {
        charged = await this.facilitator.sessionCharge({ channelId, amount: price, chargeId, units: '1' });
      } catch (error) {
        this.logger.warn(`stream on channel ${channelId} stopped: ${(error as Error).message}`);
        break;
      }
      if (charged.ok) {
        receipt = charged.receipt;
        res.write(`event: message\ndata: ${JSON.stringify(forecastHour(city, hour))}\n\n`);
        hour += 1;
        continue;
      }
      if (!('needVoucher' in charged)) break; // closing, closed or unknown: nothing more is delivered
      const need = charged.needVoucher;
      res.write(
        encodeNeedVoucherEvent({
          channelId: need.channelId as `0x${string}`,
          requiredCumulative: BigInt(need.requiredCumulative),
          acceptedCumulative: BigInt(need.acceptedCumulative),
          deposit: BigInt(need.deposit),
        }),
      );
      if (!(await this.voucherCame(channelId, need.acceptedCumulative, () => gone))) break;
    }
    if (!gone) res.end(`event: ${PAYMENT_RECEIPT_EVENT}\ndata: ${JSON.stringify(receipt)}\n\n`);
  }

  /** Vouchers, top-ups and the close of a stream's channel: relayed to the facilitator; 204 with the receipt. */
  @ApiDoc(FORECAST_STREAM_DOCS.credential)
  @Post(FORECAST_STREAM_ROUTE)
  async credential(@Req() req: Request, @Res() res: Response): Promise<void> {
    const settled = await this.settleCredential(req, res);
    if (!settled) return;
    this.signals.signal(String(settled.receipt.channelId ?? settled.receipt.reference));
    res.status(204).setHeader(PAYMENT_RECEIPT_HEADER, settled.paymentReceipt);
    res.setHeader('Cache-Control', 'no-store');
    res.end();
  }

  /** The one Payment credential of the request, settled by the facilitator; otherwise the answer is sent and undefined returned. */
  private async settleCredential(req: Request, res: Response) {
    const terms = sessionTerms(this.config);
    try {
      const credentials = paymentCredentials(req);
      if (credentials.length !== 1) {
        const issued = await this.facilitator.challenges(terms);
        if (credentials.length === 0)
          relay(
            res,
            402,
            toProblemDetails('payment-required', { detail: 'this stream is paid per forecast hour through an MPP session' }),
            issued.wwwAuthenticate,
          );
        else relay(res, 400, toProblemDetails('bad-request', { detail: 'send exactly one Payment credential' }), issued.wwwAuthenticate);
        return undefined;
      }
      const [credential] = credentials;
      const settled = await this.facilitator.settle(credential!.value, terms, credential!.header);
      if (!settled.ok) {
        relay(res, settled.status, withoutChallenges(settled.problem), settled.wwwAuthenticate);
        return undefined;
      }
      return settled;
    } catch (error) {
      const detail = error instanceof MppFacilitatorError ? error.message : `the payment facilitator is unreachable: ${(error as Error).message}`;
      relay(res, 503, problemBody('upstream_unavailable', detail, req.originalUrl), []);
      return undefined;
    }
  }

  /** Waits up to MERCHANT_SESSION_VOUCHER_WAIT_MS for the channel's accepted value to rise above `accepted`. */
  private async voucherCame(channelId: string, accepted: string, gone: () => boolean): Promise<boolean> {
    const deadline = Date.now() + this.config.mpp.session.voucherWaitMs;
    while (!gone() && Date.now() < deadline) {
      await this.signals.wait(channelId, Math.min(VOUCHER_POLL_MS, deadline - Date.now()));
      const channel = await this.facilitator.sessionChannel(channelId).catch(() => undefined);
      if (channel && BigInt(channel.acceptedCumulative) > BigInt(accepted)) return true;
    }
    return false;
  }
}

function hoursOf(value: unknown): number | undefined {
  if (value === undefined) return 24;
  if (typeof value !== 'string' || !/^[1-9][0-9]{0,2}$/.test(value)) return undefined;
  const hours = Number(value);
  return hours <= MAX_HOURS ? hours : undefined;
}

function headerValue(req: Request, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' && value.length > 0 && value.length <= 128 ? value : undefined;
}
