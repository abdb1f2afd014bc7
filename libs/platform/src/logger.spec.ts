import { Logger } from '@nestjs/common';
import { ConfigError } from './config';
import {
  AppLogger,
  logFormatFromEnv,
  logLevelsFromEnv,
  privateKeyForms,
  redactHeaders,
  redactQuery,
  redactUrl,
  registerLogSecrets,
  requestContext,
  scrubSecrets,
  urlSecrets,
} from './logger';

const KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';

describe('AppLogger', () => {
  const capture = (options: ConstructorParameters<typeof AppLogger>[0] = {}) => {
    const lines: { line: string; stream: string }[] = [];
    const logger = new AppLogger({
      service: 'facilitator',
      format: 'json',
      levels: ['error', 'warn', 'log', 'debug'],
      write: (line, stream) => lines.push({ line, stream }),
      ...options,
    });
    return { logger, lines, records: () => lines.map((l) => JSON.parse(l.line)) };
  };

  it('writes one JSON object per line with the service and, inside a request, its id', () => {
    const { logger, lines, records } = capture();
    logger.log('outside', 'Boot');
    requestContext.run({ requestId: 'req-1' }, () => logger.warn('inside', { route: '/settle' }, 'X402Service'));
    logger.error('failed', 'Error: boom\n    at x', 'Settlement');
    logger.verbose('not at this level');
    expect(lines.map((l) => l.stream)).toEqual(['stdout', 'stdout', 'stderr']);
    expect(lines.every((l) => !l.line.includes('\n'))).toBe(true);
    const [outside, inside, failed] = records();
    expect(outside).toMatchObject({ level: 'info', message: 'outside', context: 'Boot', service: 'facilitator' });
    expect(outside).not.toHaveProperty('requestId');
    expect(inside).toMatchObject({ level: 'warn', message: 'inside', context: 'X402Service', requestId: 'req-1', params: { route: '/settle' } });
    expect(failed).toMatchObject({ level: 'error', stack: 'Error: boom\n    at x', context: 'Settlement' });
  });

  it('names levels as log shippers do: info for log, trace for verbose', () => {
    const { logger, records } = capture({ levels: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] });
    logger.fatal('f');
    logger.error('e');
    logger.warn('w');
    logger.log('l');
    logger.debug('d');
    logger.verbose('v');
    expect(records().map((r) => [r.message, r.level])).toEqual([
      ['f', 'fatal'],
      ['e', 'error'],
      ['w', 'warn'],
      ['l', 'info'],
      ['d', 'debug'],
      ['v', 'trace'],
    ]);
  });

  it('masks credential headers and key-like members of structured params', () => {
    const { logger, lines } = capture();
    logger.debug(
      'request',
      { headers: redactHeaders({ authorization: 'Bearer abc', 'X-Api-Key': 'k', accept: '*/*' }), nested: { privateKey: '0x1234', password: 'pw' } },
      'HTTP',
    );
    const record = JSON.parse(lines[0].line);
    expect(record.params).toEqual({
      headers: { authorization: '[REDACTED]', 'X-Api-Key': '[REDACTED]', accept: '*/*' },
      nested: { privateKey: '[REDACTED]', password: '[REDACTED]' },
    });
  });

  it('never writes a registered secret, in any form, in messages, params or stacks, JSON or pretty', () => {
    registerLogSecrets([
      ...privateKeyForms(KEY),
      ...urlSecrets('https://base-mainnet.example.com/v2/sup3rs3cr3tk3y'),
      ...urlSecrets('postgresql://app:dbpa55word@db:5432/payments'),
    ]);
    const { logger, lines } = capture();
    const decimal = BigInt(KEY).toString(10);
    logger.error(
      `expected valid private key: 1 <= n < N, got ${decimal}`,
      `Error: key ${KEY.toUpperCase()}\n at https://base-mainnet.example.com/v2/sup3rs3cr3tk3y`,
      'NetworkRegistry',
    );
    logger.log({ message: `connect to postgresql://app:dbpa55word@db:5432/payments failed` }, 'Db');
    const all = lines.map((l) => l.line).join('\n');
    expect(all).not.toMatch(/59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d/i);
    expect(all).not.toContain(decimal);
    expect(all).not.toContain('sup3rs3cr3tk3y');
    expect(all).not.toContain('dbpa55word');
    expect(all).toContain('https://base-mainnet.example.com[REDACTED]');

    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (written.push(String(chunk)), true));
    const errSpy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (written.push(String(chunk)), true));
    try {
      const pretty = new AppLogger({ service: 'ledger', format: 'pretty', levels: ['error', 'log'] });
      requestContext.run({ requestId: 'req-9' }, () => pretty.log(`key ${KEY}`, 'Ctx'));
      pretty.error('bad', `Error\n at ${KEY}`, 'Ctx');
    } finally {
      spy.mockRestore();
      errSpy.mockRestore();
    }
    const text = written.join('');
    expect(text).toContain('[req-9]');
    expect(text).toContain('key 0x[REDACTED]');
    expect(text.toLowerCase()).not.toContain(KEY.slice(2));
    expect(scrubSecrets('nothing here')).toBe('nothing here');
  });

  it("serves Nest's static Logger once installed", () => {
    const { logger, records } = capture();
    Logger.overrideLogger(logger);
    try {
      new Logger('X402Service').log('through the static logger');
    } finally {
      Logger.overrideLogger(['error']);
    }
    expect(records()[0]).toMatchObject({ message: 'through the static logger', context: 'X402Service', service: 'facilitator' });
  });
});

describe('log configuration', () => {
  it('LOG_FORMAT: json or pretty; by default json in production only; anything else is a config error', () => {
    expect(logFormatFromEnv({})).toBe('pretty');
    expect(logFormatFromEnv({ NODE_ENV: 'production' })).toBe('json');
    expect(logFormatFromEnv({ NODE_ENV: 'production', LOG_FORMAT: 'pretty' })).toBe('pretty');
    expect(logFormatFromEnv({ LOG_FORMAT: 'json' })).toBe('json');
    expect(() => logFormatFromEnv({ LOG_FORMAT: 'xml' })).toThrow(ConfigError);
    expect(() => logFormatFromEnv({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT/);
  });

  it('LOG_LEVEL: the level and every level before it; unknown means log', () => {
    expect(logLevelsFromEnv('warn')).toEqual(['fatal', 'error', 'warn']);
    expect(logLevelsFromEnv('verbose')).toHaveLength(6);
    expect(logLevelsFromEnv('loud')).toEqual(['fatal', 'error', 'warn', 'log']);
  });

  it('LOG_LEVEL: the standard names too (info = log, trace = verbose), in any case', () => {
    expect(logLevelsFromEnv('info')).toEqual(['fatal', 'error', 'warn', 'log']);
    expect(logLevelsFromEnv('INFO')).toEqual(logLevelsFromEnv('log'));
    expect(logLevelsFromEnv('trace')).toEqual(logLevelsFromEnv('verbose'));
    expect(logLevelsFromEnv('Debug')).toEqual(['fatal', 'error', 'warn', 'log', 'debug']);
    expect(logLevelsFromEnv('error')).toEqual(['fatal', 'error']);
  });

  it('masks the Payment credential header and secret-looking query parameters', () => {
    expect(redactHeaders({ payment: 'Payment abc', 'Payment-Signature': 'sig', 'X-PAYMENT': 'p', 'user-agent': 'ua' })).toEqual({
      payment: '[REDACTED]',
      'Payment-Signature': '[REDACTED]',
      'X-PAYMENT': '[REDACTED]',
      'user-agent': 'ua',
    });
    expect(redactQuery('format=csv&token=abc.def&limit=5')).toBe('format=csv&token=[REDACTED]&limit=5');
    expect(redactQuery('api_key=k1&Secret=s&sig=x&password=p&access%5Ftoken=t')).toBe(
      'api_key=[REDACTED]&Secret=[REDACTED]&sig=[REDACTED]&password=[REDACTED]&access%5Ftoken=[REDACTED]',
    );
    expect(redactQuery('%E0%A4%A=x&after=9')).toBe('[REDACTED]=[REDACTED]&after=9');
    expect(redactQuery('flag&token')).toBe('flag&token');
    expect(redactUrl('/reconciliations/1/report?token=abc&view=all')).toBe('/reconciliations/1/report?token=[REDACTED]&view=all');
    expect(redactUrl('/supported')).toBe('/supported');
    expect(redactUrl('/supported?')).toBe('/supported?');
  });

  it('secret forms: keys as bare hex and decimal, URL passwords and paths; short values are ignored', () => {
    expect(privateKeyForms(KEY)).toEqual([KEY.slice(2), BigInt(KEY).toString(10)]);
    expect(urlSecrets('http://127.0.0.1:8545')).toEqual([]);
    expect(urlSecrets('redis://:p%40ssw0rd!@redis:6379')).toEqual(['p@ssw0rd!', 'p%40ssw0rd!']);
    expect(urlSecrets('not a url')).toEqual([]);
  });
});
