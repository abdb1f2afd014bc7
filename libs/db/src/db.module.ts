import { DynamicModule, Global, InjectionToken, Module, ModuleMetadata, OptionalFactoryDependency, Provider } from '@nestjs/common';

import { DB_OPTIONS, DbOptions } from './options';
import { PrismaService } from './prisma.service';

export interface DbModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  useFactory: (...args: any[]) => DbOptions | Promise<DbOptions>;
}

/**
 * Global module providing {@link PrismaService}.
 *
 *   imports: [DbModule]                                   // DATABASE_URL / DATABASE_POOL_SIZE or defaults
 *   imports: [DbModule.forRoot({ url, poolSize: 10 })]
 *   imports: [DbModule.forRootAsync({ inject: [CONFIG], useFactory: (c) => ({ url: c.databaseUrl }) })]
 *
 * Import it once, in the app's root module.
 */
@Global()
@Module({
  providers: [{ provide: DB_OPTIONS, useValue: {} satisfies DbOptions }, PrismaService],
  exports: [PrismaService],
})
export class DbModule {
  static forRoot(options: DbOptions = {}): DynamicModule {
    return DbModule.build([{ provide: DB_OPTIONS, useValue: options }]);
  }

  static forRootAsync(options: DbModuleAsyncOptions): DynamicModule {
    return {
      ...DbModule.build([{ provide: DB_OPTIONS, inject: options.inject ?? [], useFactory: options.useFactory }]),
      imports: options.imports ?? [],
    };
  }

  private static build(optionsProviders: Provider[]): DynamicModule {
    return {
      module: DbModule,
      global: true,
      providers: [...optionsProviders, PrismaService],
      exports: [PrismaService],
    };
  }
}
