// PM2: `npm run build && pm2 start ecosystem.config.cjs` (see README, "Running under PM2").
// Two apps: the gateway (cluster) and the IMAP sync (one forked process).
//
// Cluster mode runs one gateway process per instance on the same port. Each process has its
// own worker pool (Engine:Threads), so the default here gives each process one query thread:
// processes x threads should not exceed the cores. Set Redis:Url (Redis__Url) so that every
// process shares one rate-limit budget per key; without it each process counts on its own.
module.exports = {
  apps: [
    {
      name: 'mail-archive-gateway',
      script: './dist/gateway/server.js',
      exec_mode: 'cluster',
      instances: process.env.WEB_CONCURRENCY || 'max',
      // server.js sends 'ready' once it listens; PM2 waits for it before routing traffic.
      wait_ready: true,
      listen_timeout: 15000,
      // Shutdown drains the access log and the worker pool; give it time before SIGKILL.
      kill_timeout: 12000,
      // A safety net, above what a large archive needs: at 1,000,000 messages a process holds
      // about 1.5 GB (its 400 MiB search index, SQLite's memory-mapped pages, the page cache).
      max_memory_restart: '2G',
      env: {
        NODE_ENV: 'production',
        Engine__Threads: process.env.Engine__Threads || '1',
      },
    },
    {
      // The IMAP sync (docs/sync.md): one process in fork mode, whatever the number of gateways,
      // so a cluster never syncs an account N times. A lease per account in the database keeps
      // a second runner started by mistake (or on another host) from syncing the same account.
      name: 'mail-archive-sync',
      script: './dist/engine/cli/main.js',
      args: 'sync --watch',
      exec_mode: 'fork',
      instances: 1,
      // SIGINT lets the pass finish the message in hand and record its checkpoint.
      kill_timeout: 30000,
      env: {
        NODE_ENV: 'production',
      },
    },
  ],
};
