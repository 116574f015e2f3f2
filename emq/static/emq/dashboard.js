// emq job dashboard: keep relative times live ("in 4 s", "3 min ago") against the server's clock,
// and let a header checkbox select every row of a list.
(function () {
  "use strict";
  const root = document.getElementById("emq");
  if (!root) return;
  const skew = Number(root.dataset.now || Date.now()) - Date.now(); // server ms - browser ms
  const units = [["d", 86400], ["h", 3600], ["min", 60], ["s", 1]];

  function relative(ms) {
    const delta = (ms - (Date.now() + skew)) / 1000;
    const size = Math.abs(delta);
    if (size < 1) return "now";
    for (const [unit, seconds] of units) {
      if (size >= seconds) {
        const n = Math.floor(size / seconds);
        return delta > 0 ? `in ${n} ${unit}` : `${n} ${unit} ago`;
      }
    }
    return "now";
  }

  function tick() {
    for (const el of root.querySelectorAll("time.emq-rel")) {
      const ms = Number(el.dataset.ms);
      el.textContent = relative(ms);
      if (el.classList.contains("emq-countdown")) {
        const row = el.closest("tr[data-expiry]");
        if (row && ms <= Date.now() + skew) row.classList.add("emq-stalled");
      }
    }
  }
  tick();
  setInterval(tick, 1000);

  // Never reload while the operator is choosing or typing.
  function busy() {
    return root.querySelector("input[name=ids]:checked, details[open]") ||
      (document.activeElement && ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName) &&
       document.activeElement.id !== "emq-live");
  }

  // Optional live refresh, remembered per browser.
  const live = document.getElementById("emq-live");
  if (live) {
    live.checked = localStorage.getItem("emq-live") === "1";
    live.addEventListener("change", function () { localStorage.setItem("emq-live", live.checked ? "1" : "0"); });
    setInterval(function () {
      if (live.checked && !busy()) window.location.reload();
    }, 5000);
  }

  // Live pages (EMQ_EVENTS): long-poll the queue's event feed. A job's progress moves its bar in
  // place; any other change to what the page shows reloads it (at most every 2 s).
  const feed = root.dataset.feed, job = root.dataset.job;
  if (feed && (job || root.dataset.live)) {
    const loaded = Date.now();
    const reload = function () { setTimeout(function () { window.location.reload(); }, Math.max(0, 2000 - (Date.now() - loaded))); };
    const progress = function (e) {
      const bar = document.getElementById("emq-progress");
      if (!bar) return false;
      const percent = Math.round(Number(e.detail) * 100);
      bar.value = percent;
      document.getElementById("emq-progress-text").textContent = percent + " %";
      document.getElementById("emq-progress-note").textContent = e.extra || "";
      return true;
    };
    const poll = async function () {
      let since = "";
      for (;;) {
        try {
          const query = (since ? "&since=" + encodeURIComponent(since) : "") + (job ? "&job=" + encodeURIComponent(job) : "");
          const answer = await fetch(feed + query, {credentials: "same-origin"});
          if (!answer.ok) throw new Error(answer.status);
          const data = await answer.json();
          since = data.since;
          const changed = data.events.filter(function (e) { return !(e.kind === "progress" && job && progress(e)); });
          if (changed.length && !busy()) return reload();
        } catch (err) {
          await new Promise(function (done) { setTimeout(done, 5000); });
        }
      }
    };
    poll();
  }

  for (const all of root.querySelectorAll("input.emq-all")) {
    all.addEventListener("change", function () {
      for (const box of all.closest("table").querySelectorAll("tbody input[name=ids]")) box.checked = all.checked;
    });
  }
})();
