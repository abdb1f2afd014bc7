import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ReportsController } from '../reports/reports.controller';
import { ReconciliationController } from './reconciliation.controller';

/** The OpenAPI fragment for docs/api/openapi.json documents exactly the module's routes. */
describe('openapi.fragment.json', () => {
  const fragment = JSON.parse(readFileSync(path.join(__dirname, 'openapi.fragment.json'), 'utf8'));

  it('documents exactly the routes of the reconciliation controllers, each for the ledger', () => {
    const inCode = [ReportsController, ReconciliationController].flatMap((controller) => {
      const base = Reflect.getMetadata(PATH_METADATA, controller) as string;
      const prototype = controller.prototype as unknown as Record<string, unknown>;
      return Object.getOwnPropertyNames(prototype)
        .map((name) => prototype[name])
        .filter((handler): handler is object => typeof handler === 'function' && Reflect.getMetadata(METHOD_METADATA, handler) !== undefined)
        .map((handler) => {
          const sub = Reflect.getMetadata(PATH_METADATA, handler) as string;
          return `${RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler)]} /${base}${sub === '/' ? '' : `/${sub}`}`;
        });
    });
    const documented = Object.entries(fragment.paths as Record<string, Record<string, { tags: string[] }>>).flatMap(([p, item]) =>
      Object.entries(item)
        .filter(([method]) => method !== 'servers')
        .map(([method, op]) => {
          expect(op.tags).toEqual(['ledger']);
          return `${method.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`;
        }),
    );
    expect(documented.sort()).toEqual(inCode.sort());
  });
});
