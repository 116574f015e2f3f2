// emq job dashboard: keep relative times live ("in 4 s", "3 min ago") against the server's clock,
// let a header checkbox select every row of a list, and run an action on every job that matches a
// list's filters a step at a time (bulk, below).
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
    return root.querySelector("input[name=ids]:checked, details[open]:not(.emq-classes), #emq-bulk-run:not([hidden])") ||
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

  // Charts of job statistics (_chart.html): fetch the chart again every data-every seconds and swap the
  // server's SVG and totals in; never while the tab is hidden.
  for (const chart of root.querySelectorAll(".emq-statchart[data-src]")) {
    const every = Math.max(Number(chart.dataset.every) || 10, 2) * 1000;
    setInterval(async function () {
      if (document.hidden) return;
      try {
        const answer = await fetch(chart.dataset.src, {credentials: "same-origin"});
        if (!answer.ok) return;
        const data = await answer.json();
        chart.querySelector(".emq-statchart-svg").innerHTML = data.svg;
        const t = data.total;
        chart.querySelector(".emq-statchart-total").textContent =
          `${t.completed} completed, ${t.failed} failed (${t.retried} retried), ${t.dead} dead`;
      } catch (err) { /* the next poll tries again */ }
    }, every);
  }

  for (const all of root.querySelectorAll("input.emq-all")) {
    all.addEventListener("change", function () {
      for (const box of all.closest("table").querySelectorAll("tbody input[name=ids]")) box.checked = all.checked;
      const pick = document.getElementById("emq-select-matching");
      if (pick) pick.hidden = !all.checked;
    });
  }

  const bar = document.getElementById("emq-bulk");
  if (bar) bulk(bar);

  // "All that match": each action runs in steps, one POST a step carrying the cursor the last one answered
  // (and the totals so far), under a progress bar; after the last step the page reloads, and its message
  // says how many jobs changed. "Select all N matching" counts first (a step that changes nothing).
  function bulk(form) {
    const el = function (id) { return document.getElementById(id); };
    const run = el("emq-bulk-run"), progress = el("emq-bulk-progress"), status = el("emq-bulk-status");
    const ask = el("emq-bulk-ask"), what = el("emq-bulk-what"), pick = el("emq-select-matching");
    const labels = Object.fromEntries(form.dataset.verbs.split(";").filter(Boolean).map(function (p) { return p.split("="); }));
    const number = function (n) { return Number(n).toLocaleString("en"); };
    let matched = form.dataset.exact === "" ? null : Number(form.dataset.exact), running = false;

    async function steps(op, each) {
      let cursor = "", totals = {read: 0, matched: 0, changed: 0}, left = {};
      for (;;) {
        const body = new FormData(form);
        body.set("op", op);
        body.set("cursor", cursor);
        for (const k in totals) body.set("t_" + k, totals[k]);
        for (const k in left) body.set("left_" + k, left[k]);
        const answer = await fetch(form.action, {method: "POST", body: body, credentials: "same-origin",
          headers: {"Accept": "application/json"}});
        const data = await answer.json().catch(function () { return {}; });
        if (!answer.ok) throw new Error(data.detail || "the server answered " + answer.status);
        totals = data.totals;
        left = data.left;
        progress.max = Math.max(data.in_range, 1);
        progress.value = Math.min(totals.read, progress.max);
        each(data);
        if (data.done) return data;
        cursor = data.cursor;
      }
    }

    async function count() {
      run.hidden = false;
      const data = await steps("count", function (d) {
        status.textContent = "Counting: " + number(d.totals.matched) + " match so far (read " + number(d.totals.read) + " of " + number(d.in_range) + ")…";
      });
      matched = data.totals.matched;
      run.hidden = true;
      return matched;
    }

    async function act(op) {
      running = true;
      ask.hidden = true;
      const label = labels[op] || op;
      try {
        await steps(op, function (d) {
          status.textContent = label + ": " + number(d.totals.changed) + " of " + number(d.totals.matched) + " matching jobs changed (read " + number(d.totals.read) + " of " + number(d.in_range) + ")…";
        });
        status.textContent = "Done: reloading…";
        const here = new URL(window.location.href);
        here.searchParams.delete("after");
        here.searchParams.delete("pos");
        window.location.replace(here.toString());
      } catch (err) {
        status.textContent = label + " stopped: " + err.message + ". Press the button again to go on.";
        running = false;
      }
    }

    function confirmThen(op) {
      if (running) return;
      const target = form.querySelector("select[name=target]");
      const to = op === "move" && target ? " to queue " + target.value : "";
      run.hidden = false;
      progress.value = 0;
      status.textContent = (labels[op] || op) + " " + (matched === null ? "every matching job" : "all " + number(matched) + " matching jobs") + to + "?";
      ask.hidden = false;
      el("emq-bulk-yes").onclick = function () { act(op); };
      el("emq-bulk-no").onclick = function () { run.hidden = true; ask.hidden = true; };
    }

    form.addEventListener("submit", function (e) {
      e.preventDefault();
      confirmThen(e.submitter ? e.submitter.value : "");
    });

    if (pick) {
      pick.addEventListener("click", async function () {
        try {
          const n = matched === null ? await count() : matched;
          what.textContent = "All " + number(n) + " matching job" + (n === 1 ? "" : "s") + " selected:";
          form.dataset.all = "1";
          pick.hidden = true;
        } catch (err) {
          status.textContent = "Counting stopped: " + err.message;
        }
      });
    }

    // With every matching job selected, the page's own buttons ("Retry selected"...) act on all of them.
    for (const own of root.querySelectorAll("form")) {
      if (own === form || !own.querySelector("input[name=ids]")) continue;
      own.addEventListener("submit", function (e) {
        if (form.dataset.all !== "1") return;
        const address = (e.submitter && e.submitter.getAttribute("formaction")) || own.getAttribute("action") || "";
        const found = address.match(/\/action\/(\w+)\/?$/);
        if (!found || !labels[found[1]]) return;
        e.preventDefault();
        confirmThen(found[1]);
      });
    }
  }
})();
