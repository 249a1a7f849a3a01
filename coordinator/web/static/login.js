// The login link's secret is in the #fragment: never sent in a URL, a log or a Referer.
// It is exchanged once by POST for a session cookie, and wiped from the address bar.
const status = document.getElementById('status');
const secret = window.location.hash.slice(1);
history.replaceState(null, '', '/login');
if (!/^[0-9a-f]{64}$/.test(secret)) {
  status.textContent = 'This is not a login link: run baton ui for one.';
} else {
  const res = await fetch('/api/login', {
    method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({secret}),
    credentials: 'same-origin',
  });
  if (res.ok) {
    window.location.replace('/');
  } else {
    const err = await res.json().catch(() => ({message: res.statusText}));
    status.textContent = err.message;
  }
}
