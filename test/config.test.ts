// Settings (SPEC.md, “Configuration settings”): defaults < appsettings.json < environment, names case-insensitive,
// and every mistake a ConfigError of one line that names the setting.
import test, { type ExecutionContext } from 'ava';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import {
  ConfigError,
  defaultSettings,
  engineQueues,
  loadSettings,
  parseSecretKey,
  syncEnabled,
} from '../shared/config.js';
import { defaultPostgresIndexFile, savedIndexFile } from '../engine/pool/pool.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/fixture.js';

/** A fresh working directory, optionally holding appsettings.json (a string is written as is). */
function workdir(t: ExecutionContext, settings?: unknown, name = 'appsettings.json'): string {
  const { dir, cleanup } = tempDir('mag-config-');
  t.teardown(cleanup);
  if (settings !== undefined) {
    writeFileSync(join(dir, name), typeof settings === 'string' ? settings : JSON.stringify(settings, null, 2));
  }
  return dir;
}

/** Asserts a ConfigError of exactly one line that mentions every fragment given. */
function configError(t: ExecutionContext, load: () => unknown, ...mentions: Array<string | RegExp>): string {
  const err = t.throws(load, { instanceOf: ConfigError });
  const message = err?.message ?? '';
  t.false(/[\r\n]/.test(message), `one line: ${JSON.stringify(message)}`);
  for (const m of mentions) {
    if (typeof m === 'string') t.true(message.includes(m), `${JSON.stringify(message)} should mention ${m}`);
    else t.regex(message, m);
  }
  return message;
}

test('every default of SPEC.md, “Configuration settings”, plus the service settings', (t) => {
  const s = loadSettings({ env: {}, cwd: workdir(t) });
  t.deepEqual(s.Api, {
    Enabled: false,
    AllowAttachmentDownloads: true,
    EnableSwaggerUi: true,
    DefaultPageSize: 20,
    MaxPageSize: 100,
    RateLimitPerMinute: 120,
    MaxExportMessages: 100_000,
    AllowedOrigins: [],
  });
  t.deepEqual(s.Mcp, {
    Enabled: false,
    AllowAttachmentDownloads: true,
    DefaultPageSize: 20,
    MaxResults: 100,
    MaxAttachmentBytes: 10_000_000,
    MaxPagedAttachmentBytes: 10_000_000,
    MaxResultChars: 80_000,
    MaxConcurrentAttachmentBytes: 64_000_000,
    AttachmentWaitSeconds: 10,
    RateLimitPerMinute: 120,
    FreeRequestsPerMinute: 600,
    AllowedOrigins: [],
    OAuth: {
      Enabled: false,
      AccessTokenMinutes: 60,
      MaxGrantDays: 90,
      CodeLifetimeSeconds: 60,
      AllowDynamicRegistration: true,
      RegistrationsPerIpPerMinute: 10,
      UnusedClientMinutes: 60,
      RevocationsPerIpPerMinute: 30,
      MaxUnusedClients: 1000,
      RedirectSchemes: ['cursor'],
      ClientMetadataFetchesPerIpPerMinute: 10,
      ClientMetadataMaxConcurrentFetches: 16,
      ClientMetadataMaxBytes: 5120,
      ClientMetadataTimeoutMs: 5000,
      ClientMetadataAllowedOrigins: [],
    },
  });
  t.is(s.Server.PublicUrl, undefined);
  t.is(s.Engine.JobTimeoutSeconds, 30);
  t.is(s.Database.Path, './data/archive.db');
  t.is(s.Database.TimeZone, 'UTC');
  t.deepEqual(s.Database.ReadReplicas, []);
  t.is(s.Server.Host, '127.0.0.1');
  t.is(s.Server.Port, 5000);
  t.is(s.Redis.Url, undefined);
  t.is(s.Engine.Threads, Math.min(64, availableParallelism()));
  t.deepEqual(defaultSettings(), s);
});

test('environment variables of other programs and unknown sections are ignored', (t) => {
  const s = loadSettings({
    env: { PATH: '/usr/bin', Logging__LogLevel__Default: 'Debug', npm_config__x: '1', Api__: 'true' },
    cwd: workdir(t),
  });
  t.deepEqual(s, defaultSettings());
});

test('the settings file overrides defaults, and unknown sections in it are ignored', (t) => {
  const cwd = workdir(t, {
    Api: { Enabled: true, DefaultPageSize: 50 },
    Mcp: { AllowedOrigins: ['https://a.example'] },
    Server: { Port: 8080 },
    Redis: { Url: 'redis://localhost:6379' },
    Logging: { LogLevel: { Default: 'Information' } },
  });
  const s = loadSettings({ env: {}, cwd });
  t.true(s.Api.Enabled);
  t.is(s.Api.DefaultPageSize, 50);
  t.is(s.Api.MaxPageSize, 100, 'untouched keys keep their defaults');
  t.deepEqual(s.Mcp.AllowedOrigins, ['https://a.example']);
  t.is(s.Server.Port, 8080);
  t.is(s.Server.Host, '127.0.0.1');
  t.is(s.Redis.Url, 'redis://localhost:6379');
});

test('environment variables override the file', (t) => {
  const cwd = workdir(t, { Api: { Enabled: true, DefaultPageSize: 50 }, Server: { Port: 8080 } });
  const s = loadSettings({ env: { Api__Enabled: 'false', Server__Port: '9090', Mcp__MaxResults: '7' }, cwd });
  t.false(s.Api.Enabled);
  t.is(s.Api.DefaultPageSize, 50, 'a file value not overridden survives');
  t.is(s.Server.Port, 9090);
  t.is(s.Mcp.MaxResults, 7);
});

test('section and key names are case-insensitive in the environment and in the file', (t) => {
  const fromEnv = loadSettings({
    env: { API__ENABLED: 'TRUE', mcp__enabled: 'True', server__PORT: ' 6000 ' },
    cwd: workdir(t),
  });
  t.true(fromEnv.Api.Enabled);
  t.true(fromEnv.Mcp.Enabled);
  t.is(fromEnv.Server.Port, 6000);

  const fromFile = loadSettings({
    env: {},
    cwd: workdir(t, { api: { enabled: true, maxpagesize: 30 }, MCP: { ALLOWEDORIGINS: ['x'] } }),
  });
  t.true(fromFile.Api.Enabled);
  t.is(fromFile.Api.MaxPageSize, 30);
  t.deepEqual(fromFile.Mcp.AllowedOrigins, ['x']);

  // The environment wins over the file whatever the spelling in either.
  const both = loadSettings({ env: { API__MAXPAGESIZE: '40' }, cwd: workdir(t, { api: { MaxPageSize: 30 } }) });
  t.is(both.Api.MaxPageSize, 40);
});

test('MAIL_ARCHIVE_SETTINGS names the file (relative to cwd), instead of appsettings.json', (t) => {
  const cwd = workdir(t, { Api: { DefaultPageSize: 11 } });
  writeFileSync(join(cwd, 'other.json'), JSON.stringify({ Api: { DefaultPageSize: 33 } }));
  t.is(loadSettings({ env: {}, cwd }).Api.DefaultPageSize, 11);
  t.is(loadSettings({ env: { MAIL_ARCHIVE_SETTINGS: 'other.json' }, cwd }).Api.DefaultPageSize, 33);
  t.is(
    loadSettings({ env: { MAIL_ARCHIVE_SETTINGS: join(cwd, 'other.json') }, cwd: workdir(t) }).Api.DefaultPageSize,
    33,
  );
  t.is(
    loadSettings({ env: { MAIL_ARCHIVE_SETTINGS: 'other.json', Api__DefaultPageSize: '44' }, cwd }).Api.DefaultPageSize,
    44,
    'the environment still wins over the named file',
  );
});

test('a missing file named by MAIL_ARCHIVE_SETTINGS is an error; a missing appsettings.json is not', (t) => {
  const cwd = workdir(t);
  t.notThrows(() => loadSettings({ env: {}, cwd }));
  configError(
    t,
    () => loadSettings({ env: { MAIL_ARCHIVE_SETTINGS: 'nope.json' }, cwd }),
    'nope.json',
    'MAIL_ARCHIVE_SETTINGS',
  );
});

test('a settings path that cannot be read is reported as such, on one line', (t) => {
  const cwd = workdir(t);
  configError(t, () => loadSettings({ env: { MAIL_ARCHIVE_SETTINGS: cwd }, cwd }), cwd, 'cannot be read');
});

test('lists bind from a comma-separated value and from indexed variables', (t) => {
  const cwd = workdir(t);
  t.deepEqual(
    loadSettings({ env: { Mcp__AllowedOrigins: 'https://a.example, https://b.example' }, cwd }).Mcp.AllowedOrigins,
    ['https://a.example', 'https://b.example'],
  );
  t.deepEqual(loadSettings({ env: { Mcp__AllowedOrigins__0: 'https://a.example' }, cwd }).Mcp.AllowedOrigins, [
    'https://a.example',
  ]);
  t.deepEqual(
    loadSettings({
      env: { MCP__ALLOWEDORIGINS__1: 'https://b.example', Mcp__AllowedOrigins__0: 'https://a.example' },
      cwd,
    }).Mcp.AllowedOrigins,
    ['https://a.example', 'https://b.example'],
    'ordered by index, not by variable order',
  );
  t.deepEqual(loadSettings({ env: { Mcp__AllowedOrigins: '' }, cwd }).Mcp.AllowedOrigins, []);
  // The environment replaces a list from the file.
  const withFile = workdir(t, { Mcp: { AllowedOrigins: ['https://file.example'] } });
  t.deepEqual(
    loadSettings({ env: { Mcp__AllowedOrigins__0: 'https://env.example' }, cwd: withFile }).Mcp.AllowedOrigins,
    ['https://env.example'],
  );
});

test('an index on a setting that is not a list is an error naming it', (t) => {
  configError(
    t,
    () => loadSettings({ env: { Api__Enabled__0: 'true' }, cwd: workdir(t) }),
    'Api:Enabled',
    'Api__Enabled__0',
  );
  configError(t, () => loadSettings({ env: { Mcp__AllowedOrigins__0: '' }, cwd: workdir(t) }), 'Mcp:AllowedOrigins');
});

test('a value of the wrong type is an error naming the setting and the value', (t) => {
  const cwd = workdir(t);
  configError(t, () => loadSettings({ env: { Api__DefaultPageSize: 'abc' }, cwd }), 'Api:DefaultPageSize', '"abc"');
  configError(t, () => loadSettings({ env: { Api__DefaultPageSize: '2.5' }, cwd }), 'Api:DefaultPageSize');
  configError(t, () => loadSettings({ env: { Server__Port: '' }, cwd }), 'Server:Port');
  configError(t, () => loadSettings({ env: { Api__Enabled: 'yes' }, cwd }), 'Api:Enabled', '"yes"');
  configError(t, () => loadSettings({ env: { Api__DefaultPageSize: 'a\nb' }, cwd }), 'Api:DefaultPageSize');
  configError(t, () => loadSettings({ env: {}, cwd: workdir(t, { Api: { Enabled: 'true' } }) }), 'Api:Enabled');
  configError(t, () => loadSettings({ env: {}, cwd: workdir(t, { Mcp: { MaxResults: null } }) }), 'Mcp:MaxResults');
  configError(t, () => loadSettings({ env: {}, cwd: workdir(t, { Api: 3 }) }), 'Api', 'expected an object');
  configError(t, () => loadSettings({ env: {}, cwd: workdir(t, '[1, 2]') }), 'must hold a JSON object');
});

test('a value out of range is an error naming the setting', (t) => {
  const cwd = workdir(t);
  configError(t, () => loadSettings({ env: { Server__Port: '70000' }, cwd }), 'Server:Port', '70000');
  configError(t, () => loadSettings({ env: { Api__MaxPageSize: '0' }, cwd }), 'Api:MaxPageSize');
  configError(t, () => loadSettings({ env: { Api__RateLimitPerMinute: '-1' }, cwd }), 'Api:RateLimitPerMinute');
  configError(t, () => loadSettings({ env: { Engine__Threads: '65' }, cwd }), 'Engine:Threads');
  configError(t, () => loadSettings({ env: {}, cwd: workdir(t, { Database: { Path: '' } }) }), 'Database:Path');
  t.is(
    loadSettings({ env: { Server__Port: '0', Mcp__MaxAttachmentBytes: '0' }, cwd }).Server.Port,
    0,
    'bounds are inclusive',
  );
});

test('an unknown key in a known section is an error, from the environment or the file', (t) => {
  configError(t, () => loadSettings({ env: { Api__Enabld: 'true' }, cwd: workdir(t) }), 'Api:Enabld', 'Api__Enabld');
  configError(
    t,
    () => loadSettings({ env: {}, cwd: workdir(t, { Api: { Enabld: true } }) }),
    'Unknown setting',
    'Api:Enabld',
  );
  configError(t, () => loadSettings({ env: {}, cwd: workdir(t, { mcp: { maxresult: 5 } }) }), 'Mcp:maxresult');
  configError(t, () => loadSettings({ env: {}, cwd: workdir(t, { Api: { 'Ena\nbld': true } }) }), 'Api:Ena');
});

test('an invalid JSON file is an error of one line naming the file and where it breaks', (t) => {
  const cwd = workdir(t, '{\n  "Api": {\n    "Enabled": true,\n  }\n}\n');
  configError(t, () => loadSettings({ env: {}, cwd }), join(cwd, 'appsettings.json'), 'not valid JSON', 'line 4');
  configError(t, () => loadSettings({ env: {}, cwd: workdir(t, '{"Api": {') }), 'not valid JSON');
  configError(t, () => loadSettings({ env: {}, cwd: workdir(t, '') }), 'not valid JSON');
});

// Bug fixed with this test: V8's JSON.parse message quotes the source text ("Unexpected token
// 'x', "{\n ..." is not valid JSON"), so the ConfigError spanned several lines and could print
// secrets from the file.
test('the invalid JSON error neither spans lines nor quotes the file', (t) => {
  const cwd = workdir(t, '{\n  "Web": { "SessionSecret": "correct horse battery staple" },\n  "Api": x\n}\n');
  const message = configError(t, () => loadSettings({ env: {}, cwd }), 'not valid JSON');
  t.false(message.includes('correct horse'), message);
});

// Bug fixed with this test: a UTF-8 byte order mark (as Visual Studio and `dotnet new` write
// appsettings.json) made the file "not valid JSON".
test('a settings file that starts with a UTF-8 byte order mark is read', (t) => {
  const cwd = workdir(t, '\uFEFF{ "Api": { "Enabled": true } }');
  t.true(loadSettings({ env: {}, cwd }).Api.Enabled);
});

// Bug fixed with this test: the "got …" part of a validation error echoed secret values.
test('an invalid secret setting is named but its value is not echoed', (t) => {
  const message = configError(
    t,
    () => loadSettings({ env: { Web__SessionSecret: 'hunter2' }, cwd: workdir(t) }),
    'Web:SessionSecret',
  );
  t.false(message.includes('hunter2'), message);
  t.is(
    loadSettings({ env: { Web__SessionSecret: 'a'.repeat(32) }, cwd: workdir(t) }).Web.SessionSecret,
    'a'.repeat(32),
  );
});

test('overrides win over file and environment', (t) => {
  const cwd = workdir(t, { Api: { DefaultPageSize: 50 } });
  const s = loadSettings({ env: { Api__DefaultPageSize: '60' }, cwd, overrides: { Api: { DefaultPageSize: 70 } } });
  t.is(s.Api.DefaultPageSize, 70);
});

test('the CLI stops with one line naming the bad setting, without a stack trace', async (t) => {
  const cwd = workdir(t);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, Api__DefaultPageSize: 'abc' };
  const result = await runCli(['users', 'list'], { cwd, env });
  t.not(result.code, 0);
  t.is(result.stdout, '');
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  t.is(lines.length, 1, result.stderr);
  t.true(lines[0]!.includes('Api:DefaultPageSize'), result.stderr);
  t.false(/^\s{4}at /m.test(result.stderr), 'no stack trace');
});

test('Metrics: off by default, loopback only, and AllowFrom binds like other lists', (t) => {
  const cwd = workdir(t);
  t.deepEqual(loadSettings({ env: {}, cwd }).Metrics, { Enabled: false, AllowFrom: ['127.0.0.0/8', '::1'] });
  const s = loadSettings({
    env: { Metrics__Enabled: 'true', Metrics__AllowFrom: '10.0.0.0/8, 192.0.2.7 ,fd00::/8' },
    cwd,
  });
  t.true(s.Metrics.Enabled);
  t.deepEqual(s.Metrics.AllowFrom, ['10.0.0.0/8', '192.0.2.7', 'fd00::/8']);
  t.deepEqual(loadSettings({ env: { METRICS__ALLOWFROM__0: '::1' }, cwd }).Metrics.AllowFrom, ['::1']);
  t.deepEqual(
    loadSettings({ env: {}, cwd: workdir(t, { Metrics: { AllowFrom: ['203.0.113.0/24'] } }) }).Metrics.AllowFrom,
    ['203.0.113.0/24'],
  );
});

test('Metrics:AllowFrom accepts only addresses and CIDR blocks', (t) => {
  const cwd = workdir(t);
  for (const bad of ['localhost', '10.0.0.0/33', '::1/129', '10.0.0.0/8/1', '10.0.0/8', '10.0.0.0/x', '*']) {
    configError(t, () => loadSettings({ env: { Metrics__AllowFrom: bad }, cwd }), 'Metrics:AllowFrom', bad);
  }
  configError(t, () => loadSettings({ env: { Metrics__Enabled: 'on' }, cwd }), 'Metrics:Enabled');
});

test('engine queue bounds default to 64 per query thread, 256 interactive and a 500 ms wait, and can be set', (t) => {
  const cwd = workdir(t);
  const defaults = loadSettings({ env: { Engine__Threads: '3' }, cwd }).Engine;
  t.deepEqual(engineQueues(defaults), { query: 192, interactive: 256 });
  t.is(defaults.MaxQueueWaitMs, 500);
  t.is(loadSettings({ env: { Engine__MaxQueueWaitMs: '2000' }, cwd }).Engine.MaxQueueWaitMs, 2000);
  configError(t, () => loadSettings({ env: { Engine__MaxQueueWaitMs: '0' }, cwd }), 'Engine:MaxQueueWaitMs', '0');
  // What one message's attachment text may cost a phrase (docs/security.md, "Mail shaped by an attacker", 2).
  t.is(defaults.PhraseScanWords, 16_384);
  t.is(loadSettings({ env: { Engine__PhraseScanWords: '1000' }, cwd }).Engine.PhraseScanWords, 1000);
  configError(t, () => loadSettings({ env: { Engine__PhraseScanWords: '1' }, cwd }), 'Engine:PhraseScanWords', '1');
  const set = loadSettings({ env: { Engine__MaxQueue: '0', Engine__InteractiveMaxQueue: '1000' }, cwd }).Engine;
  t.deepEqual(engineQueues(set), { query: 0, interactive: 1000 }, '0 is allowed: nothing waits');
  const file = loadSettings({ env: {}, cwd: workdir(t, { engine: { maxqueue: 5 } }) }).Engine;
  t.is(engineQueues(file).query, 5);
  configError(t, () => loadSettings({ env: { Engine__MaxQueue: '-1' }, cwd }), 'Engine:MaxQueue', '-1');
  configError(
    t,
    () => loadSettings({ env: { Engine__InteractiveMaxQueue: 'lots' }, cwd }),
    'Engine:InteractiveMaxQueue',
  );
});

test('Database:TimeZone takes IANA names only; Database:ReadReplicas takes PostgreSQL URLs, also from the environment', (t) => {
  const ok = loadSettings({
    env: {
      Database__Path: 'postgres://gw@db.internal/mailarchiver',
      Database__TimeZone: 'Europe/Berlin',
      Database__ReadReplicas: 'postgres://gw@replica1/mailarchiver, postgresql://gw@replica2/mailarchiver',
    },
    cwd: workdir(t),
  });
  t.is(ok.Database.TimeZone, 'Europe/Berlin');
  t.deepEqual(ok.Database.ReadReplicas, [
    'postgres://gw@replica1/mailarchiver',
    'postgresql://gw@replica2/mailarchiver',
  ]);
  configError(
    t,
    () => loadSettings({ env: { Database__TimeZone: 'CET+1' }, cwd: workdir(t) }),
    'Database:TimeZone',
    'IANA',
  );
  configError(
    t,
    () => loadSettings({ env: {}, cwd: workdir(t, { Database: { ReadReplicas: ['replica1:5432'] } }) }),
    'Database:ReadReplicas',
    'postgres://',
  );
});

test('Sync: defaults, on for SQLite and off for PostgreSQL unless Sync:Enabled says otherwise', (t) => {
  const s = loadSettings({ env: {}, cwd: workdir(t) });
  t.deepEqual(s.Sync, { IntervalMinutes: 15, WindowBytes: 64 * 1024 * 1024, MaxFolders: 1000, PassMinutes: 60 });
  t.true(syncEnabled(s));
  const pgUrl = 'postgres://postgres@127.0.0.1:5432/mailarchiver';
  t.false(syncEnabled(loadSettings({ env: { Database__Path: pgUrl }, cwd: workdir(t) })));
  t.true(syncEnabled(loadSettings({ env: { Database__Path: pgUrl, Sync__Enabled: 'true' }, cwd: workdir(t) })));
  t.false(syncEnabled(loadSettings({ env: { Sync__Enabled: 'false' }, cwd: workdir(t) })));
  t.is(loadSettings({ env: { Sync__IntervalMinutes: '5' }, cwd: workdir(t) }).Sync.IntervalMinutes, 5);
  configError(t, () => loadSettings({ env: { Sync__IntervalMinutes: '0' }, cwd: workdir(t) }), 'Sync:IntervalMinutes');
});

test('Import: the bounds on hostile mail have defaults, are read from the environment and checked', (t) => {
  const s = loadSettings({ env: {}, cwd: workdir(t) });
  t.deepEqual(s.Import, {
    AttachmentTextPerMessage: 2_000_000,
    AttachmentTextPerMessageByte: 10,
    AttachmentTextPerPass: 50_000_000,
    AttachmentTextSecondsPerMessage: 30,
    AttachmentTextSecondsPerPass: 600,
    MaxTnefFiles: 100,
    MaxMessageBytes: 100 * 1024 * 1024,
  });
  const set = loadSettings({
    env: { Import__MaxTnefFiles: '5', Import__MaxMessageBytes: '2048', Sync__WindowBytes: '4096' },
    cwd: workdir(t),
  });
  t.like(set, { Import: { MaxTnefFiles: 5, MaxMessageBytes: 2048 }, Sync: { WindowBytes: 4096 } });
  configError(
    t,
    () => loadSettings({ env: { Import__MaxMessageBytes: '10' }, cwd: workdir(t) }),
    'Import:MaxMessageBytes',
  );
  configError(
    t,
    () => loadSettings({ env: { Import__AttachmentTextSecondsPerMessage: '0' }, cwd: workdir(t) }),
    'Import:AttachmentTextSecondsPerMessage',
  );
});

test('Sync:SecretKey takes 32 bytes as base64 or hex; anything else is one line that does not echo it', (t) => {
  const bytes = Buffer.alloc(32, 7);
  for (const text of [bytes.toString('base64'), bytes.toString('hex'), bytes.toString('base64url')]) {
    const s = loadSettings({ env: { Sync__SecretKey: text }, cwd: workdir(t) });
    t.deepEqual(parseSecretKey(s.Sync.SecretKey!), bytes);
  }
  for (const bad of ['hunter2hunter2', Buffer.alloc(16, 1).toString('base64'), 'ab'.repeat(31)]) {
    const message = configError(
      t,
      () => loadSettings({ env: { Sync__SecretKey: bad }, cwd: workdir(t) }),
      'Sync:SecretKey',
      '32 bytes as base64',
    );
    t.false(message.includes(bad), 'the value is not echoed');
  }
});

test('Mcp:OAuth binds from the environment as a section inside Mcp; Server:PublicUrl takes an origin', (t) => {
  const s = loadSettings({
    env: {
      Mcp__OAuth__Enabled: 'true',
      mcp__oauth__accesstokenminutes: '15',
      Mcp__OAuth__ClientMetadataAllowedOrigins: 'http://127.0.0.1:8123,http://10.0.0.5',
      Server__PublicUrl: 'https://archive.example.com/',
    },
    cwd: workdir(t),
  });
  t.true(s.Mcp.OAuth.Enabled);
  t.is(s.Mcp.OAuth.AccessTokenMinutes, 15);
  t.deepEqual(s.Mcp.OAuth.ClientMetadataAllowedOrigins, ['http://127.0.0.1:8123', 'http://10.0.0.5']);
  t.is(s.Server.PublicUrl, 'https://archive.example.com');
  t.deepEqual(s.Mcp.OAuth.RedirectSchemes, ['cursor'], 'Cursor registers cursor://…, which has no dot');
  const schemes = (v: string) => loadSettings({ env: { Mcp__OAuth__RedirectSchemes: v }, cwd: workdir(t) });
  t.deepEqual(schemes('cursor,windsurf').Mcp.OAuth.RedirectSchemes, ['cursor', 'windsurf']);
  for (const bad of ['ms-msdt', 'view-source', 'https', 'Cursor:'])
    t.throws(() => schemes(bad), { message: /Mcp:OAuth:RedirectSchemes/ }, bad);
  t.throws(() => loadSettings({ env: { Mcp__OAuth__Nope: 'x' }, cwd: workdir(t) }), {
    message: /^Unknown setting Mcp:OAuth:Nope/,
  });
  t.throws(() => loadSettings({ env: { Server__PublicUrl: 'https://archive.example.com/mcp' }, cwd: workdir(t) }), {
    message: /^Invalid setting Server:PublicUrl: expected an origin/,
  });
  t.throws(() => loadSettings({ env: { Mcp__OAuth__AccessTokenMinutes: '0' }, cwd: workdir(t) }), {
    message: /^Invalid setting Mcp:OAuth:AccessTokenMinutes/,
  });
});

test('Engine:SearchIndexFile: beside a SQLite archive when unset, in data/ for PostgreSQL, off when empty', (t) => {
  const cwd = workdir(t);
  const unset = loadSettings({ env: {}, cwd }).Engine.SearchIndexFile;
  t.is(unset, undefined);
  t.is(savedIndexFile('/data/archive.db', unset), '/data/archive.db.index');
  t.is(
    savedIndexFile('postgres://gw@db/mailarchiver', unset, '/srv/mag'),
    defaultPostgresIndexFile('postgres://gw@db/mailarchiver', '/srv/mag'),
  );
  t.regex(
    savedIndexFile('postgres://gw@db/mailarchiver', unset, '/srv/mag')!,
    /^\/srv\/mag\/data\/postgres-mailarchiver-[0-9a-f]{12}\.index$/,
  );
  t.is(savedIndexFile('postgres://gw@db/mailarchiver', '', '/srv/mag'), undefined);
  const set = loadSettings({ env: { Engine__SearchIndexFile: '/var/cache/mag/search.index' }, cwd }).Engine;
  t.is(savedIndexFile('postgres://gw@db/mailarchiver', set.SearchIndexFile), '/var/cache/mag/search.index');
  const off = loadSettings({ env: {}, cwd: workdir(t, { engine: { searchindexfile: '' } }) }).Engine;
  t.is(off.SearchIndexFile, '');
  t.is(savedIndexFile('/data/archive.db', off.SearchIndexFile), undefined);
  configError(
    t,
    () => loadSettings({ env: {}, cwd: workdir(t, { engine: { searchindexfile: 5 } }) }),
    'Engine:SearchIndexFile',
  );
});

test('Api:MaxExportMessages: a whole number from 1 to 1,000,000', (t) => {
  t.is(loadSettings({ env: { Api__MaxExportMessages: '250' }, cwd: workdir(t) }).Api.MaxExportMessages, 250);
  configError(
    t,
    () => loadSettings({ env: { Api__MaxExportMessages: '0' }, cwd: workdir(t) }),
    'Api:MaxExportMessages',
  );
  configError(
    t,
    () => loadSettings({ env: { Api__MaxExportMessages: '1000001' }, cwd: workdir(t) }),
    'Api:MaxExportMessages',
  );
  configError(
    t,
    () => loadSettings({ env: { Api__MaxExportMessages: 'lots' }, cwd: workdir(t) }),
    'Api:MaxExportMessages',
  );
});
