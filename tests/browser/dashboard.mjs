// The web dashboard in a real browser (issue 48): Debian's chromium-headless-shell driven
// by playwright-core. Run by tests/integration/browser_test.cc against a real cluster:
//   node dashboard.mjs '{"link": …, "bobLink": …, "held": …, "running": …, "training": …,
//                        "cancelled": …, "markup": …, "evictFile": …, "shots": …}'
// link/bobLink: fresh `baton ui` links for baton-alice and baton-bob. held: alice's job
// waiting with MARKUP (an <img> with an onerror handler) as its hold reason. running: hers
// to cancel, with MARKUP in an env value. training: hers, running on
// both GPUs and printing MARKUP to its output; once its page is open this script creates
// evictFile, the test then submits bob's inference job, which evicts it, and writes its id
// to evictFile.id. cancelled: hers, cancelled with MARKUP as the reason. shots: a folder
// for a screenshot of every page at 1366×768. Prints one JSON line {"ok": …, "failures":
// […], "problems": […], "eviction_seen_ms": …} and exits 1 on any failure.
import {chromium} from 'playwright-core';
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs';

const args = JSON.parse(process.argv[2]);
const origin = new URL(args.link).origin;
const failures = [];
const problems = [];  // console errors and page errors while the pages are used
const check = (ok, what) => { if (!ok) failures.push(what); };
let evictionMs = null;
let step = 'start';  // named in an exception's failure

const browser = await chromium.launch({
  executablePath: process.env.BATON_CHROMIUM || '/usr/lib/chromium/chromium-headless-shell',
  args: ['--no-sandbox'],
});
const watch = page => {
  page.on('console', m => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', e => problems.push(`page error: ${e.message}`));
  page.on('dialog', d => d.accept());
};
const noMarkupRan = async (page, where) => {
  check(await page.$('main img') === null, `markup in ${where} made an element`);
  check(await page.evaluate(() => window.pwned === undefined), `markup in ${where} ran script`);
};
try {
  if (args.shots) mkdirSync(args.shots, {recursive: true});
  const shot = async (page, name) => {
    if (args.shots) await page.screenshot({path: `${args.shots}/${name}.png`});
  };
  // The certificate is the cluster CA's, which this throwaway profile does not hold; TLS
  // verification itself is coordinator_web_test's and EndToEnd's.
  const context = await browser.newContext({ignoreHTTPSErrors: true,
                                            viewport: {width: 1366, height: 768}});
  const page = await context.newPage();
  watch(page);

  step = 'no session';
  // No page loads data without a session.
  await page.goto(`${origin}/#/queue`);
  await page.waitForSelector('main p.bad', {timeout: 10000});
  check((await page.textContent('main')).includes('baton ui'), 'no session: told to run baton ui');
  problems.length = 0;  // the refused requests are logged as errors, as they should be

  step = 'sign in';
  // The link signs in once and leaves no secret in the address bar.
  await page.goto(args.link);
  await page.waitForURL(u => new URL(u).pathname === '/', {timeout: 10000});
  check(!page.url().includes(new URL(args.link).hash.slice(1)), 'the secret left in the address bar');
  await page.waitForFunction(() => document.getElementById('who').textContent !== '');
  check((await page.textContent('#who')).includes('baton-alice'), 'signed in as baton-alice');
  const cookies = await context.cookies();
  const session = cookies.find(c => c.name === '__Host-baton_session');
  check(session && session.httpOnly && session.secure && session.sameSite === 'Strict',
        `session cookie attributes: ${JSON.stringify(session)}`);
  check(await page.evaluate(() => document.cookie) === '', 'the session is not readable by script');

  step = 'overview';
  // Overview: free GPUs first.
  await page.waitForSelector('.card .free', {timeout: 10000});
  check((await page.textContent('main')).includes('free of'), 'free GPUs on the overview');
  await shot(page, 'overview');

  step = 'queue';
  // Queue: the pending reason on the row, written by a person, shown as text.
  await page.goto(`${origin}/#/queue`);
  await page.waitForSelector(`a[href="#/job/${args.held}"]`, {timeout: 10000});
  const queue = await page.textContent('main');
  check(queue.includes(args.markup), 'the hold reason shown literally on the row');
  check(queue.includes('held by baton-alice'), 'the pending reason on the row');
  await noMarkupRan(page, 'a hold reason');
  // BATON_SCREENSHOT=FILE: the queue as the README shows it.
  if (process.env.BATON_SCREENSHOT) await page.screenshot({path: process.env.BATON_SCREENSHOT});
  await shot(page, 'queue');

  step = 'nodes';
  await page.goto(`${origin}/#/nodes`);
  await page.waitForSelector('#gpu-grid .gpu', {timeout: 10000});
  check(await page.$$eval('#gpu-grid .gpu:not(.idle)', e => e.length) >= 2,
        'the training job\'s GPUs coloured on the grid');
  // Utilisation beside allocation: the agent's sample (3%) on each GPU, the held ones
  // marked as nearly idle.
  await page.waitForSelector('#gpu-grid .gpu.held-idle', {timeout: 15000});
  check((await page.textContent('#gpu-grid')).includes('3%'), 'utilisation on the grid');
  // MIG slices inside their GPU: two slices of n2's one GPU, one held by bob's service.
  const slices = await page.$$eval('#gpu-grid .mig .gpu', e => e.map(x => x.textContent));
  check(slices.length === 2, `two MIG slices drawn in one GPU (saw ${slices.length})`);
  check(slices.some(t => t.startsWith(`${args.sliced} `) && t.includes('3g.40gb')),
        'the slice holding the MIG job shows the job and its profile');
  check(slices.some(t => t.startsWith('·')), 'the other slice free');
  check((await page.textContent('main')).includes('1 (2 MIG slices)'),
        'the node table counts the GPU and its slices');
  // An MPS pool: n3's GPU 0, a 30% share of bob's on it.
  const pools = await page.$$eval('#gpu-grid .gpu.mps', e => e.map(x => [x.textContent, x.title]));
  check(pools.length === 1, `one MPS pool on the grid (saw ${pools.length})`);
  check(pools.length === 1 && pools[0][0] === `${args.shared} MPS 30%` && !pools[0][0].includes('idle'),
        `the pool shows its share's job and the compute held (saw ${pools.length && pools[0][0]})`);
  check(pools.length === 1 && pools[0][1].includes('4.0 of 80.0 GiB') &&
            pools[0][1].includes('running as baton-bob'),
        `the pool's title gives its memory and its server's user (saw ${pools.length && pools[0][1]})`);
  await shot(page, 'nodes');
  await page.goto(`${origin}/#/tenants`);
  await page.waitForSelector('#tenants svg', {timeout: 10000});
  await shot(page, 'tenants');

  step = 'training job page';
  // The training job's page: its output's tail, a person's markup in it shown as text;
  // then, with no reload, its eviction by bob's inference job.
  await page.goto(`${origin}/#/job/${args.training}`);
  await page.waitForFunction(m => document.getElementById('log') &&
                                  document.getElementById('log').textContent.includes(m),
                             args.markup, {timeout: 15000});
  await noMarkupRan(page, 'a log line');
  // Keyboard navigation reaches every action of the page.
  const reached = new Set();
  await page.focus('body');
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press('Tab');
    reached.add(await page.evaluate(() => document.activeElement.textContent.trim()));
  }
  for (const action of ['Cancel this job', 'Send SIGUSR1 (checkpoint now)', 'Queue', 'Nodes']) {
    check(reached.has(action), `Tab never reaches "${action}"`);
  }
  await shot(page, 'job');
  await page.evaluate(() => { window.notReloaded = true; });
  writeFileSync(args.evictFile, 'now');
  await page.waitForSelector('#attempts a[href^="#/job/"]', {timeout: 30000});
  evictionMs = await page.evaluate(() => Date.now());
  check(await page.evaluate(() => window.notReloaded === true), 'the page reloaded to show the eviction');
  const serve = readFileSync(`${args.evictFile}.id`, 'utf8').trim();
  check(await page.$(`#attempts a[href="#/job/${serve}"]`) !== null,
        `the evicting job ${serve} on the timeline: ${await page.textContent('#attempts')}`);

  step = 'running job page';
  // The running job: markup in an env value and a node selector's value stays text.
  await page.goto(`${origin}/#/job/${args.running}`);
  await page.waitForSelector('#spec', {timeout: 10000});
  check((await page.textContent('#spec')).includes(args.markup), 'env value shown literally');
  await noMarkupRan(page, 'an env value');
  // An action carries the CSRF token and takes effect.
  await page.click('text=Cancel this job');
  await page.waitForFunction(() => document.querySelector('#events') &&
                                   document.querySelector('#events').textContent.includes('cancel'),
                             null, {timeout: 10000});

  step = 'reasons';
  // Reasons people wrote, in the events: a hold's and a cancel's, as text.
  for (const [id, what] of [[args.held, 'a hold reason'], [args.cancelled, 'a cancel reason']]) {
    await page.goto(`${origin}/#/job/${id}`);
    await page.waitForSelector('#events', {timeout: 10000});
    check((await page.textContent('#events')).includes(args.markup), `${what} shown literally`);
    await noMarkupRan(page, what);
  }

  step = 'bob';
  // Bob: alice's job shows him no Cancel, and the endpoint refuses him whatever he sends.
  const bobContext = await browser.newContext({ignoreHTTPSErrors: true});
  const bob = await bobContext.newPage();
  watch(bob);
  await bob.goto(args.bobLink);
  await bob.waitForFunction(() => document.getElementById('who').textContent.includes('baton-bob'),
                            null, {timeout: 10000});
  await bob.goto(`${origin}/#/job/${args.held}`);
  await bob.waitForSelector('#events', {timeout: 10000}).catch(async e => {
    throw new Error(`${e.message}; bob's page says: ${await bob.textContent('body')}`);
  });
  check(await bob.$('text=Cancel this job') === null, 'bob is shown a Cancel for alice\'s job');
  const refused = await bob.evaluate(async id => {
    const codes = [];
    for (const token of [null, '0'.repeat(64)]) {
      const headers = token ? {'X-CSRF-Token': token} : {};
      codes.push((await fetch(`/api/v1/jobs/${id}/cancel`, {method: 'POST', headers})).status);
    }
    return codes;
  }, args.held);
  check(refused.every(c => c === 403), `a forged cancel without or with a stale token: ${refused}`);
  problems.splice(0);  // the refusals are logged as errors, as they should be

  step = 'spent link';
  // The link again, in a fresh context: spent.
  const again = await (await browser.newContext({ignoreHTTPSErrors: true})).newPage();
  await again.goto(args.link);
  await again.waitForFunction(
      () => document.getElementById('status').textContent.includes('unknown, used or expired'),
      null, {timeout: 10000});

  step = 'framing';
  // Another site framing the dashboard is refused (frame-ancestors 'none').
  const before = problems.length;
  const framed = await context.newPage();
  await framed.setContent(`<iframe src="${origin}/"></iframe>`);
  await framed.waitForTimeout(500);
  const frame = framed.frames().find(f => f.url().startsWith(origin));
  check(!frame || (await frame.content().catch(() => '')).indexOf('Overview') < 0,
        'the dashboard rendered inside another page');
  problems.length = before;  // the refusal is logged as an error, as it should be

  step = 'inline script';
  // Were markup ever to get in, the page's policy refuses inline script.
  const clean = problems.length;
  await page.evaluate(() => {
    const s = document.createElement('script');
    s.textContent = 'window.injected = 1';
    document.body.appendChild(s);
  });
  check(await page.evaluate(() => window.injected === undefined),
        'an inline script ran: no strict Content-Security-Policy');
  problems.length = clean;  // the refusal is logged as an error, as it should be
} catch (e) {
  failures.push(`exception at ${step}: ${e.message}`);
} finally {
  await browser.close();
}
const ok = failures.length === 0 && problems.length === 0;
console.log(JSON.stringify({ok, failures, problems, eviction_seen_ms: evictionMs}));
process.exit(ok ? 0 : 1);
