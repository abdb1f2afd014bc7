#!/usr/bin/env node
// Builds libs/clients as the npm package @machine-payments/clients and packs it to a tarball:
//
//   node scripts/pack-clients.mjs [--out <dir>]     (npm run pack:clients) prints the tarball's absolute path
//
// The package carries an ESM build and a CJS build, each with its declarations (dist/esm, dist/cjs, chosen by the
// `exports` map). The other @mp/* libs are not published: the few of their files the clients import are compiled
// into the package under dist/*/vendor/<lib>/, so a merchant installs nothing but the dependencies that
// libs/clients/package.json declares. The build refuses to pack when the package's version or a dependency's
// version differs from the root package.json, or when the output imports a package it does not declare.
import { execFileSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LIBS = path.join(ROOT, 'libs');
const PACKAGE_DIR = path.join(LIBS, 'clients');

export function packClients(outDir = path.join(ROOT, 'dist', 'packages')) {
  const manifest = readJson(path.join(PACKAGE_DIR, 'package.json'));
  checkVersionsMatchRoot(manifest, readJson(path.join(ROOT, 'package.json')));

  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'mp-clients-package-'));
  try {
    const imported = new Set();
    build('esm', path.join(staging, 'dist', 'esm'), imported);
    build('cjs', path.join(staging, 'dist', 'cjs'), imported);
    checkImportsDeclared(imported, manifest);
    fs.copyFileSync(path.join(PACKAGE_DIR, 'package.json'), path.join(staging, 'package.json'));
    fs.copyFileSync(path.join(PACKAGE_DIR, 'README.md'), path.join(staging, 'README.md'));

    fs.mkdirSync(outDir, { recursive: true });
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', path.resolve(outDir)], {
        cwd: staging,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    return path.resolve(outDir, packed[0].filename);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/** One format: compiles libs/clients/src (and the lib files it imports) with tsconfig.build.json into `outDir`. */
function build(format, outDir, imported) {
  const configPath = path.join(PACKAGE_DIR, 'tsconfig.build.json');
  const { config, error } = ts.readConfigFile(configPath, ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, PACKAGE_DIR, undefined, configPath);
  const options = {
    ...parsed.options,
    module: format === 'esm' ? ts.ModuleKind.ESNext : ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    outDir: path.join(outDir, '.tsc'),
    noEmitOnError: true,
  };
  const program = ts.createProgram({ rootNames: parsed.fileNames, options });
  const diagnostics = [...parsed.errors, ...ts.getPreEmitDiagnostics(program)];
  if (diagnostics.length) throw new Error(`libs/clients does not compile (${format}):\n${ts.formatDiagnostics(diagnostics, formatHost)}`);

  const rewrite = specifierRewriter(options, imported);
  const result = program.emit(
    undefined,
    (fileName, text) => {
      const target = outputPath(path.relative(options.outDir, fileName), outDir);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, text);
    },
    undefined,
    false,
    { before: [rewrite], afterDeclarations: [rewrite] },
  );
  if (result.emitSkipped || result.diagnostics.length)
    throw new Error(`libs/clients did not emit (${format}):\n${ts.formatDiagnostics(result.diagnostics, formatHost)}`);
  // Node and TypeScript read each build's format from the nearest package.json.
  fs.writeFileSync(path.join(outDir, 'package.json'), `${JSON.stringify({ type: format === 'esm' ? 'module' : 'commonjs' })}\n`);
}

/** Where a compiled file lands: libs/clients/src/x -> x; libs/<other>/src/x -> vendor/<other>/x. */
function outputPath(relativeToLibs, outDir) {
  const [lib, src, ...rest] = relativeToLibs.split(path.sep);
  if (src !== 'src') throw new Error(`unexpected compiled file outside a lib's src: ${relativeToLibs}`);
  return lib === 'clients' ? path.join(outDir, ...rest) : path.join(outDir, 'vendor', lib, ...rest);
}

/**
 * Rewrites every import of a workspace file (relative, or an @mp/* alias) to the relative path of its compiled
 * file, with the .js extension ESM needs; records every other specifier (packages and node builtins).
 */
function specifierRewriter(options, imported) {
  return (context) => (sourceFile) => {
    const sourceOut = outputPath(path.relative(LIBS, sourceFile.fileName.replace(/\.d\.ts$/, '.ts')), '/');
    const rewritten = (specifier) => {
      const resolved = ts.resolveModuleName(specifier, sourceFile.fileName, options, ts.sys).resolvedModule;
      if (!resolved || resolved.isExternalLibraryImport || !resolved.resolvedFileName.startsWith(LIBS + path.sep)) {
        imported.add(specifier);
        return undefined;
      }
      const targetOut = outputPath(path.relative(LIBS, resolved.resolvedFileName), '/').replace(/\.ts$/, '.js');
      const relative = path.posix.relative(path.posix.dirname(sourceOut), targetOut);
      return relative.startsWith('.') ? relative : `./${relative}`;
    };
    const { factory } = context;
    const visit = (node) => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const to = rewritten(node.moduleSpecifier.text);
        return to ? factory.updateImportDeclaration(node, node.modifiers, node.importClause, factory.createStringLiteral(to), node.attributes) : node;
      }
      if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        const to = rewritten(node.moduleSpecifier.text);
        return to
          ? factory.updateExportDeclaration(node, node.modifiers, node.isTypeOnly, node.exportClause, factory.createStringLiteral(to), node.attributes)
          : node;
      }
      if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
        const to = rewritten(node.argument.literal.text);
        if (to)
          return factory.updateImportTypeNode(
            node,
            factory.createLiteralTypeNode(factory.createStringLiteral(to)),
            node.attributes,
            node.qualifier,
            node.typeArguments,
            node.isTypeOf,
          );
      }
      return ts.visitEachChild(node, visit, context);
    };
    return ts.visitEachChild(sourceFile, visit, context);
  };
}

function checkVersionsMatchRoot(manifest, root) {
  const problems = [];
  if (manifest.version !== root.version) problems.push(`version ${manifest.version}, root ${root.version}`);
  for (const [name, range] of Object.entries(manifest.dependencies ?? {})) {
    const rootVersion = root.dependencies?.[name];
    if (range.replace(/^[\^~]/, '') !== rootVersion) problems.push(`dependency ${name} ${range}, root uses ${rootVersion ?? 'none'}`);
  }
  if (problems.length) throw new Error(`libs/clients/package.json must follow the root package.json: ${problems.join('; ')}`);
}

function checkImportsDeclared(imported, manifest) {
  const builtins = new Set(builtinModules);
  const undeclared = [...imported].filter((specifier) => {
    if (specifier.startsWith('node:') || builtins.has(specifier)) return false;
    const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
    return !(name in (manifest.dependencies ?? {}));
  });
  if (undeclared.length) throw new Error(`the package imports what libs/clients/package.json does not declare: ${undeclared.join(', ')}`);
}

const formatHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outIndex = process.argv.indexOf('--out');
  try {
    console.log(packClients(outIndex > 0 ? path.resolve(process.argv[outIndex + 1]) : undefined));
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
