// Browser test of the dashboard: starts a real `fulcrum agent --source sim` with 2 GPUs and an
// overheat on GPU 0 a few seconds in, opens the page in Debian's headless chromium (through
// playwright-core) and checks that it loads without console errors, that every GPU panel draws
// its charts with data, that the overheat appears as a firing alert within seconds, that it keeps
// updating without a reload, that it fits a phone's width, and that every request stays on the
// agent (no CDN, no token). Saves a full-page screenshot (--screenshot) for people to look at.
//
// Usage (ctest registers it from web/CMakeLists.txt):
//   node tests/dashboard/dashboard_test.mjs --fulcrum build/fulcrum \
//        --seed-jobs build/web/dashboard_seed_jobs --work-dir build/dashboard_test --screenshot build/dashboard.png
// --settle-seconds N delays the screenshot until the agent has run N seconds (the README's
// picture: --settle-seconds 90). Exit status 0 when every check passes, 1 with the failed check's reason otherwise.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHROMIUM = '/usr/bin/chromium';
const GPU_COUNT = 2;
const OVERHEAT_AT_SECONDS = 3;
// A power cap on GPU 1 that comes and goes: its alert must show as resolved.
const POWER_CAP_AT_SECONDS = 1;
const POWER_CAP_FOR_SECONDS = 3;
// From the overheat's time to the firing row on the page: the agent's 1 s sampling, a 1 s `for`,
// and the page's 2 s poll, with room for a loaded CI machine.
const ALERT_DEADLINE_SECONDS = 15;

class CheckFailed extends Error {}
const fail = (message) => { throw new CheckFailed(message); };

function parseArgs(argv) {
  const args = { fulcrum: null, seedJobs: null, workDir: null, screenshot: null, settleSeconds: 0 };
  for (let i = 0; i < argv.length; i++) {
    const next = () => argv[++i] ?? fail('missing value after ' + argv[i - 1]);
    if (argv[i] === '--fulcrum') args.fulcrum = path.resolve(next());
    else if (argv[i] === '--seed-jobs') args.seedJobs = path.resolve(next());
    else if (argv[i] === '--work-dir') args.workDir = path.resolve(next());
    else if (argv[i] === '--screenshot') args.screenshot = path.resolve(next());
    else if (argv[i] === '--settle-seconds') args.settleSeconds = Number(next());
    else fail('unknown argument ' + argv[i]);
  }
  if (!args.fulcrum || !args.seedJobs || !args.workDir || !args.screenshot) {
    fail('usage: dashboard_test.mjs --fulcrum BIN --seed-jobs BIN --work-dir DIR --screenshot FILE.png ' +
      '[--settle-seconds N]');
  }
  return args;
}

function loadPlaywright() {
  const require = createRequire(path.join(REPO, 'web/package.json'));
  try {
    return require('playwright-core');
  } catch (err) {
    fail('playwright-core is not installed: run `npm ci` in web/ (scripts/setup.sh does it): ' + err.message);
  }
}

// The agent must exist in this build; say so plainly when it does not.
function checkAgentCommand(fulcrum) {
  if (!fs.existsSync(fulcrum)) fail(fulcrum + ' does not exist: build the `fulcrum` target first');
  const help = spawnSync(fulcrum, ['agent', '--help'], { encoding: 'utf8', timeout: 10000 });
  if (help.status !== 0 || !/--sim-scenario/.test(help.stdout)) {
    fail('`fulcrum agent` with the sim source is not available in this build (issue #6, branch `agent`); ' +
      '`fulcrum agent --help` exited ' + help.status + ': ' + (help.stderr || help.stdout).trim().slice(0, 300));
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function writeInputs(workDir) {
  const scenario = path.join(workDir, 'scenario.yaml');
  fs.writeFileSync(scenario, [
    `- {at: ${OVERHEAT_AT_SECONDS}s, gpu: 0, fault: overheat}`,
    `- {at: ${POWER_CAP_AT_SECONDS}s, gpu: 1, fault: power-cap, for: ${POWER_CAP_FOR_SECONDS}s}`,
    ''].join('\n'));
  // The shipped rule waits 5 minutes; this one fires on the next sample above 85 C.
  const rules = path.join(workDir, 'rules.yaml');
  fs.writeFileSync(rules, [
    'rules:',
    '  - name: GpuTooHot',
    '    metric: gpu_temperature_celsius',
    '    op: ">"',
    '    threshold: 85',
    '    for: 1s',
    '    keep_firing_for: 0s',
    '    severity: critical',
    '    annotations: {summary: "GPU temperature {{ $value }} C, above {{ $threshold }} C"}',
    '  - {name: GpuPowerCapped, metric: gpu_power_capped, op: "==", threshold: 1, for: 0s, severity: warning,',
    '     annotations: {summary: "GPU held at its power limit"}}',
    '',
  ].join('\n'));
  return { scenario, rules };
}

// The main agent: the fault scenario, the fast rules and two supervised jobs in its jobs.db
// (written through the real store by --seed-jobs).
async function startMainAgent(fulcrum, seedJobs, workDir) {
  const { scenario, rules } = writeInputs(workDir);
  const dataDir = path.join(workDir, 'data');
  fs.mkdirSync(dataDir, { recursive: true });
  const seeded = spawnSync(seedJobs, [dataDir], { encoding: 'utf8', timeout: 10000 });
  if (seeded.status !== 0) fail(seedJobs + ' failed: ' + (seeded.stderr || seeded.error));
  return startAgent(fulcrum, workDir, ['--sim-scenario', scenario, '--rules', rules, '--data-dir', dataDir]);
}

// An agent whose GPUs go idle at once (the training process exits) with idle release armed
// (dry run): the page must count down to the release.
async function startIdleAgent(fulcrum, workDir) {
  fs.mkdirSync(workDir, { recursive: true });
  const scenario = path.join(workDir, 'scenario.yaml');
  fs.writeFileSync(scenario, [...Array(GPU_COUNT).keys()].map((g) => `- {at: 0s, gpu: ${g}, fault: process-exit}\n`).join(''));
  const config = path.join(workDir, 'agent.yaml');
  fs.writeFileSync(config, 'idle: {enabled: true, dry_run: true, after: 10m, warn_before: 1m, command: ["true"]}\n');
  return startAgent(fulcrum, workDir, ['--config', config, '--sim-scenario', scenario,
    '--data-dir', path.join(workDir, 'data')]);
}

async function startAgent(fulcrum, workDir, extraArgs) {
  const port = await freePort();
  const argv = ['agent', '--source', 'sim', '--sim-gpus', String(GPU_COUNT), '--interval', '1s',
    '--listen', '127.0.0.1:' + port, ...extraArgs];
  const log = fs.openSync(path.join(workDir, 'agent.log'), 'w');
  const child = spawn(fulcrum, argv, { stdio: ['ignore', log, log] });
  const startedAt = Date.now();
  const agent = { child, port, startedAt, url: 'http://127.0.0.1:' + port, exited: null };
  child.on('exit', (code, signal) => { agent.exited = { code, signal }; });
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline) {
    if (agent.exited) break;
    try {
      const res = await fetch(agent.url + '/v1/health');
      if (res.ok) return agent;
    } catch { /* not listening yet */ }
    await sleep(100);
  }
  const tail = fs.readFileSync(path.join(workDir, 'agent.log'), 'utf8').slice(-1500);
  stopAgent(agent);
  fail('the agent did not answer /v1/health within 15 s (' + fulcrum + ' ' + argv.join(' ') + ')' +
    (agent.exited ? ', it exited with ' + JSON.stringify(agent.exited) : '') + '; its log:\n' + tail);
}

function stopAgent(agent) {
  if (!agent || agent.exited) return Promise.resolve();
  return new Promise((resolve) => {
    const killer = setTimeout(() => agent.child.kill('SIGKILL'), 3000);
    agent.child.once('exit', () => { clearTimeout(killer); resolve(); });
    agent.child.kill('SIGTERM');
  });
}

// Counts, per chart, the pixels of its series colour on its canvas: proof that a line was drawn.
function chartPixels(page) {
  return page.evaluate(() => [...document.querySelectorAll('.chart')].map((chart) => {
    const hex = chart.dataset.color;
    const rgb = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    const canvas = chart.querySelector('canvas');
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    let matching = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i + 3] > 200 && Math.abs(data[i] - rgb[0]) < 24 && Math.abs(data[i + 1] - rgb[1]) < 24 &&
          Math.abs(data[i + 2] - rgb[2]) < 24) matching++;
    }
    return { gpu: chart.dataset.gpu, metric: chart.dataset.metric, points: Number(chart.dataset.points), matching };
  }));
}

async function waitFor(description, deadlineMs, probe) {
  const deadline = Date.now() + deadlineMs;
  let last;
  while (Date.now() < deadline) {
    last = await probe();
    if (last && last.ok) return last;
    await sleep(200);
  }
  fail(description + ' (last seen: ' + JSON.stringify(last && last.seen) + ')');
}

async function checkPage(page, agent, problems, screenshot, settleSeconds) {
  await page.goto(agent.url + '/', { waitUntil: 'load' });
  await page.evaluate(() => { window.__loadedOnce = true; });

  // One panel per GPU, each with four charts that have points and visibly drawn lines.
  await waitFor('each of the ' + GPU_COUNT + ' GPU panels should draw 4 charts with data', 15000, async () => {
    const charts = await chartPixels(page);
    const panels = await page.locator('article.gpu').count();
    const drawn = charts.filter((c) => c.points > 0 && c.matching >= 10);
    return { ok: panels === GPU_COUNT && charts.length === 4 * GPU_COUNT && drawn.length === charts.length,
      seen: { panels, charts } };
  });
  console.log('ok: %d GPU panels, each drawing 4 charts with data', GPU_COUNT);

  // The overheat on GPU 0 shows as a firing alert, and the panel is marked.
  const row = 'tr[data-status="firing"][data-rule="GpuTooHot"]';
  const fired = await waitFor('the overheat on GPU 0 should show as a firing GpuTooHot alert within ' +
      ALERT_DEADLINE_SECONDS + ' s of the fault', (OVERHEAT_AT_SECONDS + ALERT_DEADLINE_SECONDS) * 1000 -
      (Date.now() - agent.startedAt), async () => {
    const rows = await page.locator(row).allInnerTexts();
    const gpu0 = rows.find((text) => /GPU 0\b/.test(text));
    return { ok: Boolean(gpu0), seen: { rows: await page.locator('#alerts tbody tr').allInnerTexts() } };
  });
  const seconds = ((Date.now() - agent.startedAt) / 1000 - OVERHEAT_AT_SECONDS).toFixed(1);
  console.log('ok: firing GpuTooHot on GPU 0 shown %s s after the fault (%s)', seconds, JSON.stringify(fired.seen.rows));
  if (!(await page.locator('article.gpu[data-gpu="0"].firing').count())) fail('GPU 0 panel is not marked firing');
  await waitFor('the power cap on GPU 1 should show as a resolved GpuPowerCapped alert', 10000, async () => {
    const rows = await page.locator('tr[data-status="resolved"][data-rule="GpuPowerCapped"]').allInnerTexts();
    return { ok: rows.some((text) => /GPU 1\b/.test(text)), seen: await page.locator('#alerts tbody tr').allInnerTexts() };
  });
  console.log('ok: resolved GpuPowerCapped on GPU 1 shown');
  const temp = await page.locator('article.gpu[data-gpu="0"] .stat.bad').allInnerTexts();
  if (!temp.some((t) => /9\d °C/.test(t))) fail('GPU 0 panel should show its temperature above 90 °C in red, saw ' + temp);

  // The supervised jobs from jobs.db: state, GPUs, step, restarts, checkpoint age, spend/budget.
  const jobs = await waitFor('the jobs table should list the 2 seeded jobs', 5000, async () => {
    const rows = await page.locator('#jobs tbody tr').allInnerTexts();
    return { ok: rows.length === 2, seen: rows };
  });
  const running = jobs.seen.find((text) => text.startsWith('llama-8b-sft')) || '';
  for (const want of [/\brunning\b/, /0, 1/, /12,840/, /\t1\t/, /ago/, /\$38\.40 \/ \$120\.00 \(32 %\)/]) {
    if (!want.test(running)) fail('the llama-8b-sft row should match ' + want + ', saw ' + JSON.stringify(running));
  }
  const stopped = jobs.seen.find((text) => text.startsWith('eval-sweep')) || '';
  if (!/budget_exhausted 3h/.test(stopped)) {
    fail('the eval-sweep row should show its supervisor alert budget_exhausted, saw ' + JSON.stringify(stopped));
  }
  console.log('ok: jobs table (%s)', JSON.stringify(jobs.seen));

  // Live: the page keeps updating without a reload.
  const before = await page.locator('#conn').innerText();
  await waitFor('the page should keep updating by itself', 6000, async () => {
    const now = await page.locator('#conn').innerText();
    return { ok: now !== before && /live/.test(now), seen: { before, now } };
  });
  if (!(await page.evaluate(() => window.__loadedOnce === true))) fail('the page reloaded itself');
  console.log('ok: live updates without reload');

  // The 1 h and 24 h windows refetch and still draw every chart.
  for (const name of ['1h', '24h', '15m']) {
    await page.click(`#windows button[data-window="${name}"]`);
    await waitFor(`every chart should have data in the ${name} window`, 8000, async () => {
      const charts = await chartPixels(page);
      const hash = await page.evaluate(() => location.hash);
      return { ok: hash === '#w=' + name && charts.every((c) => c.points > 0 && c.matching >= 2), seen: { hash, charts } };
    });
  }
  console.log('ok: 15 min / 1 h / 24 h windows');

  // Readable on a phone: nothing wider than the screen except inside scrolling tables.
  await page.setViewportSize({ width: 390, height: 844 });
  await sleep(300);
  const phoneWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  if (phoneWidth > 390) fail('on a 390 px phone the page is ' + phoneWidth + ' px wide');
  await page.setViewportSize({ width: 1280, height: 900 });
  await sleep(300);
  console.log('ok: fits a 390 px phone screen');

  // --settle-seconds: let the charts fill before the picture (for docs/dashboard.png).
  const settleMs = settleSeconds * 1000 - (Date.now() - agent.startedAt);
  if (settleMs > 0) await sleep(settleMs);
  await page.mouse.move(0, 0);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log('ok: screenshot saved to %s', screenshot);
  if (problems.length) fail('the page had errors:\n  ' + problems.join('\n  '));

  // When the agent goes away the page says so (and keeps retrying) instead of showing stale data
  // as live. Failed requests are expected from here on.
  await stopAgent(agent);
  await waitFor('the page should say the agent is unreachable once it stops', 10000, async () => {
    const conn = await page.locator('#conn').innerText();
    return { ok: /unreachable/.test(conn), seen: conn };
  });
  console.log('ok: shows "agent unreachable" after the agent stops');
}

// "release in 9m 55s", then a smaller figure a few seconds later, without a reload.
async function checkIdleCountdown(page, agent) {
  await page.goto(agent.url + '/', { waitUntil: 'load' });
  const seconds = (text) => {
    const m = /release in (\d+)m (\d+)s/.exec(text);
    return m ? Number(m[1]) * 60 + Number(m[2]) : null;
  };
  const first = await waitFor('an idle agent with release armed should show "release in Xm Ys"', 15000, async () => {
    const text = await page.locator('#idle').innerText();
    return { ok: seconds(text) != null && seconds(text) <= 600, seen: text };
  });
  await waitFor('the idle countdown should tick down', 5000, async () => {
    const text = await page.locator('#idle').innerText();
    return { ok: seconds(text) != null && seconds(text) < seconds(first.seen), seen: [first.seen, text] };
  });
  const sub = await page.locator('#idle-sub').innerText();
  if (!/dry run/.test(sub)) fail('the idle card should say the release is a dry run, saw ' + JSON.stringify(sub));
  console.log('ok: idle countdown (%s, %s)', first.seen, sub);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { chromium } = loadPlaywright();
  if (!fs.existsSync(CHROMIUM)) fail(CHROMIUM + ' is missing (Debian package chromium; scripts/setup.sh installs it)');
  checkAgentCommand(args.fulcrum);
  fs.rmSync(args.workDir, { recursive: true, force: true });
  fs.mkdirSync(args.workDir, { recursive: true });
  fs.mkdirSync(path.dirname(args.screenshot), { recursive: true });

  const agent = await startMainAgent(args.fulcrum, args.seedJobs, args.workDir);
  let idleAgent;
  let context;
  try {
    context = await chromium.launchPersistentContext(path.join(args.workDir, 'chromium-profile'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 900 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
    const page = context.pages()[0] || (await context.newPage());
    const problems = [];
    page.on('console', (msg) => { if (msg.type() === 'error') problems.push('console error: ' + msg.text()); });
    page.on('pageerror', (err) => problems.push('uncaught exception: ' + err.message));
    page.on('requestfailed', (req) => problems.push('request failed: ' + req.url() + ' ' + req.failure()?.errorText));
    page.on('request', (req) => {
      const url = req.url();
      if (url.startsWith('data:')) return;
      if (!url.startsWith(agent.url + '/')) problems.push('request left the agent: ' + url);
      if (req.method() !== 'GET') problems.push('non-GET request: ' + req.method() + ' ' + url);
      if (req.headers().authorization) problems.push('request carried a token: ' + url);
    });
    await checkPage(page, agent, problems, args.screenshot, args.settleSeconds);
    await page.close();  // it polls its stopped agent: those failures were expected
    problems.length = 0;

    idleAgent = await startIdleAgent(args.fulcrum, path.join(args.workDir, 'idle'));
    const idlePage = await context.newPage();
    idlePage.on('console', (msg) => { if (msg.type() === 'error') problems.push('console error: ' + msg.text()); });
    idlePage.on('pageerror', (err) => problems.push('uncaught exception: ' + err.message));
    await checkIdleCountdown(idlePage, idleAgent);
    if (problems.length) fail('the idle page had errors:\n  ' + problems.join('\n  '));
  } finally {
    if (context) await context.close();
    await stopAgent(agent);
    await stopAgent(idleAgent);
  }
  fs.rmSync(args.workDir, { recursive: true, force: true });
  console.log('PASS dashboard_browser');
}

main().catch((err) => {
  console.error('FAIL dashboard_browser: ' + (err instanceof CheckFailed ? err.message : err.stack));
  process.exit(1);
});
