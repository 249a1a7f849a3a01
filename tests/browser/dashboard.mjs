// The web dashboard in a real browser (issue 48): Debian's chromium-headless-shell driven
// by playwright-core. Run by tests/integration/browser_test.cc against a real cluster:
//   node dashboard.mjs LINK HELD_JOB RUNNING_JOB MARKUP
// LINK is a fresh `baton ui` link for baton-alice; HELD_JOB waits with MARKUP (an <img>
// with an onerror handler) in its hold reason; RUNNING_JOB is hers to cancel. Prints one
// JSON line {"ok": …, "failures": […], "problems": […]} and exits 1 on any failure.
import {chromium} from 'playwright-core';

const [link, heldJob, runningJob, markup] = process.argv.slice(2);
const origin = new URL(link).origin;
const failures = [];
const problems = [];  // console errors and page errors while the pages are used
const check = (ok, what) => { if (!ok) failures.push(what); };

const browser = await chromium.launch({
  executablePath: process.env.BATON_CHROMIUM || '/usr/lib/chromium/chromium-headless-shell',
  args: ['--no-sandbox'],
});
try {
  // The certificate is the cluster CA's, which this throwaway profile does not hold; TLS
  // verification itself is coordinator_web_test's and EndToEnd's.
  const context = await browser.newContext({ignoreHTTPSErrors: true,
                                            viewport: {width: 1200, height: 420}});
  const page = await context.newPage();
  page.on('console', m => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', e => problems.push(`page error: ${e.message}`));
  page.on('dialog', d => d.accept());

  // The link signs in once and leaves no secret in the address bar.
  await page.goto(link);
  await page.waitForURL(u => new URL(u).pathname === '/', {timeout: 10000});
  check(!page.url().includes('#') || !page.url().includes(new URL(link).hash.slice(1)),
        'the secret left in the address bar');
  await page.waitForFunction(() => document.getElementById('who').textContent !== '');
  check((await page.textContent('#who')).includes('baton-alice'), 'signed in as baton-alice');
  const cookies = await context.cookies();
  const session = cookies.find(c => c.name === '__Host-baton_session');
  check(session && session.httpOnly && session.secure && session.sameSite === 'Strict',
        `session cookie attributes: ${JSON.stringify(session)}`);
  check(await page.evaluate(() => document.cookie) === '', 'the session is not readable by script');

  // Overview: free GPUs first.
  await page.waitForSelector('.card .free', {timeout: 10000});
  check((await page.textContent('main')).includes('free of'), 'free GPUs on the overview');

  // Queue: the pending reason on the row, written by a person, shown as text.
  await page.goto(`${origin}/#/queue`);
  await page.waitForSelector(`a[href="#/job/${heldJob}"]`, {timeout: 10000});
  const queue = await page.textContent('main');
  check(queue.includes(markup), 'the hold reason shown literally on the row');
  check(queue.includes('held by baton-alice'), 'the pending reason on the row');
  check(await page.$('main img') === null, 'markup in a reason made an element');
  check(await page.evaluate(() => window.pwned === undefined), 'markup in a reason ran script');
  // BATON_SCREENSHOT=FILE: the queue as the README shows it.
  if (process.env.BATON_SCREENSHOT) await page.screenshot({path: process.env.BATON_SCREENSHOT});

  // Job page: an action carries the CSRF token and takes effect.
  await page.goto(`${origin}/#/job/${runningJob}`);
  await page.waitForSelector('text=Cancel this job', {timeout: 10000});
  await page.click('text=Cancel this job');
  await page.waitForFunction(() => document.querySelector('main').textContent.includes('cancel'),
                             null, {timeout: 10000});

  // The link again, in a fresh context: spent.
  const again = await (await browser.newContext({ignoreHTTPSErrors: true})).newPage();
  await again.goto(link);
  await again.waitForFunction(
      () => document.getElementById('status').textContent.includes('unknown, used or expired'),
      null, {timeout: 10000});

  // Another site framing the dashboard is refused (frame-ancestors 'none').
  const before = problems.length;
  const framed = await context.newPage();
  await framed.setContent(`<iframe src="${origin}/"></iframe>`);
  await framed.waitForTimeout(500);
  const frame = framed.frames().find(f => f.url().startsWith(origin));
  check(!frame || (await frame.content().catch(() => '')).indexOf('Overview') < 0,
        'the dashboard rendered inside another page');
  problems.length = before;  // the refusal is logged as an error, as it should be

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
  failures.push(`exception: ${e.message}`);
} finally {
  await browser.close();
}
const ok = failures.length === 0 && problems.length === 0;
console.log(JSON.stringify({ok, failures, problems}));
process.exit(ok ? 0 : 1);
