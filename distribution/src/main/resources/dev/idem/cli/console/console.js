// The Idem console's page: polls /console/api/metrics, draws rates with uPlot, shows and replays dead letters,
// looks keys up and releases claims.
// Everything the server sends is shown through textContent, never as HTML.
(function () {
  "use strict";

  const API = "/console/api";
  const INTERVAL_MS = 2000;
  const WINDOW_POINTS = 150; // 5 minutes at 2 s
  const OUTCOMES = ["processed", "duplicate", "stale", "rejected", "retried", "dead-lettered"];
  const COLOURS = ["#1b7f3b", "#5b6b7b", "#8e6c00", "#7b3fa0", "#1f6feb", "#b3261e"];

  let session = {authenticated: false, actions: false, tokenConfigured: false};
  let pipelines = [];
  const history = {}; // pipeline -> {t: [], rates: {outcome: []}, inFlight: [], backlog: [], last: metrics}
  const charts = {};

  function $(id) { return document.getElementById(id); }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }

  async function call(path, options) {
    const response = await fetch(API + path, Object.assign({credentials: "same-origin"}, options || {}));
    let body = null;
    try { body = await response.json(); } catch (e) { body = null; }
    if (!response.ok) {
      const message = body && body.error ? body.error : "HTTP " + response.status;
      const error = new Error(message);
      error.status = response.status;
      throw error;
    }
    return body;
  }

  function status(text, isError) {
    const s = $("status");
    s.textContent = text;
    s.className = isError ? "status error" : "status";
  }

  function showSession() {
    const s = $("session");
    s.textContent = "";
    if (session.actions) {
      s.appendChild(el("span", "logged in "));
      const out = el("button", "log out");
      out.type = "button";
      out.addEventListener("click", async () => {
        await fetch("/console/logout", {method: "POST", credentials: "same-origin", headers: csrfHeaders()});
        location.reload();
      });
      s.appendChild(out);
    } else if (session.tokenConfigured) {
      const a = el("a", "log in to replay and release");
      a.href = "/console/login";
      s.appendChild(a);
    } else {
      s.textContent = "read only (no runtime.console.token)";
    }
  }

  function csrfHeaders() {
    const h = {"Content-Type": "application/json"};
    if (session.csrf) { h["X-Idem-Csrf"] = session.csrf; }
    return h;
  }

  function fmtSeconds(s) {
    if (s === null || s === undefined) { return "–"; }
    if (s < 1) { return "0 s"; }
    if (s < 120) { return s.toFixed(0) + " s"; }
    return (s / 60).toFixed(1) + " min";
  }

  function renderPipelines(metrics) {
    const byName = {};
    (metrics ? metrics.pipelines : []).forEach(p => { byName[p.name] = p; });
    const body = $("pipelines").tBodies[0];
    body.textContent = "";
    pipelines.forEach(p => {
      const m = byName[p.name] || {};
      const h = history[p.name];
      const tr = el("tr");
      tr.id = "pipeline-" + p.name;
      tr.appendChild(el("td", p.name));
      tr.appendChild(el("td", p.source));
      tr.appendChild(el("td", p.store));
      tr.appendChild(el("td", p.mode));
      tr.appendChild(el("td", p.state, "state-" + p.state));
      tr.appendChild(el("td", m.inFlight === undefined ? "–" : m.inFlight, "num"));
      tr.appendChild(el("td", fmtSeconds(m.oldestInFlightSeconds), "num"));
      const backlog = m.backlog || {};
      const parts = Object.keys(backlog).map(k => (k || "all") + ": " + backlog[k]);
      tr.appendChild(el("td", parts.length ? parts.join(", ") : "–"));
      tr.appendChild(el("td", h && h.claimMs !== null && h.claimMs !== undefined ? h.claimMs.toFixed(2) + " ms" : "–",
          "num"));
      body.appendChild(tr);
    });
    const outbox = $("outbox");
    if (metrics && metrics.outbox) {
      outbox.hidden = false;
      outbox.textContent = "Outbox: " + metrics.outbox.backlog + " rows waiting, oldest "
          + fmtSeconds(metrics.outbox.oldestAgeSeconds);
    } else {
      outbox.hidden = true;
    }
  }

  function makeCharts(name) {
    const box = el("div", null, "chart");
    box.id = "chart-" + name;
    box.dataset.points = "0";
    box.dataset.processed = "0";
    box.appendChild(el("h3", name + ": messages per second"));
    const rates = el("div");
    box.appendChild(rates);
    box.appendChild(el("h3", name + ": in flight and backlog"));
    const load = el("div");
    box.appendChild(load);
    $("charts").appendChild(box);
    const width = Math.min(640, Math.max(360, window.innerWidth / 2 - 60));
    const rateChart = new uPlot({
      width: width, height: 200,
      scales: {x: {time: true}},
      series: [{}].concat(OUTCOMES.map((o, i) => ({label: o, stroke: COLOURS[i], width: 1.5,
        value: (u, v) => v === null ? "–" : v.toFixed(1)}))),
      axes: [{}, {label: "/s"}],
    }, [[]].concat(OUTCOMES.map(() => [])), rates);
    const loadChart = new uPlot({
      width: width, height: 160,
      scales: {x: {time: true}},
      series: [{}, {label: "in flight", stroke: "#1f6feb", width: 1.5}, {label: "backlog", stroke: "#8e6c00", width: 1.5}],
    }, [[], [], []], load);
    charts[name] = {box: box, rates: rateChart, load: loadChart};
  }

  function record(metrics) {
    const t = metrics.time / 1000;
    metrics.pipelines.forEach(p => {
      let h = history[p.name];
      if (!h) {
        h = history[p.name] = {t: [], rates: {}, inFlight: [], backlog: [], last: null, claimMs: null};
        OUTCOMES.forEach(o => { h.rates[o] = []; });
      }
      const last = h.last;
      if (last) {
        const dt = t - last.time;
        if (dt > 0) {
          h.t.push(t);
          OUTCOMES.forEach(o => {
            h.rates[o].push(Math.max(0, (p.messages[o] - last.messages[o]) / dt));
          });
          h.inFlight.push(p.inFlight);
          h.backlog.push(Object.values(p.backlog || {}).reduce((a, b) => a + (b || 0), 0));
          if (h.t.length > WINDOW_POINTS) {
            h.t.shift(); h.inFlight.shift(); h.backlog.shift();
            OUTCOMES.forEach(o => h.rates[o].shift());
          }
        }
        const c = p.store.claim;
        const lc = last.store.claim;
        if (c && lc && c.count > lc.count) {
          h.claimMs = (c.totalSeconds - lc.totalSeconds) / (c.count - lc.count) * 1000;
        }
      }
      h.last = {time: t, messages: p.messages, store: p.store};
      const chart = charts[p.name];
      if (chart) {
        chart.rates.setData([h.t].concat(OUTCOMES.map(o => h.rates[o])));
        chart.load.setData([h.t, h.inFlight, h.backlog]);
        chart.box.dataset.points = String(h.t.length);
        chart.box.dataset.processed = String(p.messages.processed);
      }
    });
  }

  async function poll() {
    try {
      const metrics = await call("/metrics");
      pipelines = (await call("/pipelines")).pipelines;
      record(metrics);
      renderPipelines(metrics);
      status("updated " + new Date(metrics.time).toLocaleTimeString(), false);
    } catch (e) {
      status("update failed: " + e.message, true);
    }
  }

  function showKey(k, note) {
    const result = $("key-result");
    result.textContent = "";
    const dl = el("dl");
    dl.id = "key-details";
    const rows = [["pipeline", k.pipeline], ["namespace", k.namespace], ["key", k.id], ["state", k.state]];
    if (k.attempts !== undefined) { rows.push(["attempts", k.attempts]); }
    if (k.state === "claimed" && k.starts !== undefined) { rows.push(["starts", k.starts]); }
    if (k.leaseUntil) { rows.push(["owner's lease until", k.leaseUntil]); }
    if (k.expiresAt) { rows.push(["forgotten at", k.expiresAt]); }
    if (k.fingerprint) { rows.push(["fingerprint", k.fingerprint]); }
    rows.forEach(([name, value]) => {
      dl.appendChild(el("dt", name));
      const dd = el("dd", value);
      dd.dataset.field = name;
      dl.appendChild(dd);
    });
    result.appendChild(dl);
    if (note) { result.appendChild(el("p", note)); }
    if (k.state === "claimed") {
      if (session.actions) {
        const b = el("button", "Release this claim…", "danger");
        b.type = "button";
        b.id = "key-release";
        b.addEventListener("click", () => confirmRelease(k));
        result.appendChild(b);
      } else {
        result.appendChild(el("p", session.tokenConfigured ? "Log in to release this claim."
            : "Releasing needs runtime.console.token."));
      }
    }
  }

  function confirmRelease(k) {
    $("confirm-text").textContent = "Release the claim on key '" + k.id + "' of pipeline '" + k.pipeline
        + "'? Its next delivery runs the handler again. If its owner is still running the handler, that run"
        + " loses its claim and its message may be processed twice: release only a claim whose owner is gone.";
    $("confirm").hidden = false;
    $("confirm-release").onclick = async () => {
      $("confirm").hidden = true;
      try {
        const answer = await call("/keys/release", {method: "POST", headers: csrfHeaders(),
          body: JSON.stringify({pipeline: k.pipeline, id: k.id})});
        const now = await call("/keys?pipeline=" + encodeURIComponent(k.pipeline) + "&id=" + encodeURIComponent(k.id));
        showKey(now, answer.released ? "Released." : "Nothing was released: the key was " + answer.was.state + ".");
      } catch (e) {
        $("key-result").appendChild(el("p", "Release failed: " + e.message, "error"));
      }
    };
  }

  async function lookUp(event) {
    event.preventDefault();
    $("confirm").hidden = true;
    const pipeline = $("key-pipeline").value;
    const id = $("key-id").value;
    try {
      showKey(await call("/keys?pipeline=" + encodeURIComponent(pipeline) + "&id=" + encodeURIComponent(id)));
    } catch (e) {
      const result = $("key-result");
      result.textContent = "";
      result.appendChild(el("p", "Lookup failed: " + e.message, "error"));
    }
  }

  let deadLetters = null; // the last answer of /dead-letters

  async function loadDeadLetters(event) {
    if (event) { event.preventDefault(); }
    const pipeline = $("dl-pipeline").value;
    const full = $("dl-full").checked ? "&full=true" : "";
    $("dl-groups").textContent = "";
    $("dl-summary").textContent = "reading…";
    try {
      deadLetters = await call("/dead-letters?pipeline=" + encodeURIComponent(pipeline) + full);
    } catch (e) {
      $("dl-summary").textContent = "";
      $("dl-summary").appendChild(el("p", "Cannot show the dead letters: " + e.message, "error"));
      return;
    }
    renderDeadLetters();
  }

  function renderDeadLetters() {
    const d = deadLetters;
    $("dl-full-label").hidden = !d.showPayloads;
    $("dl-replay-selected").hidden = !session.actions;
    const summary = $("dl-summary");
    summary.textContent = "";
    let text = d.read === 0 ? "No dead letters in '" + d.destination + "'."
        : "Read " + d.read + (d.read === 1 ? " dead letter" : " dead letters") + " from '" + d.destination + "'" + (d.more ? " (the first " + d.page
          + "; more wait behind them)" : "") + ".";
    if (d.otherPipelines > 0) { text += " " + d.otherPipelines + " of other pipelines are not shown."; }
    summary.appendChild(el("p", text));
    const groups = $("dl-groups");
    groups.textContent = "";
    d.groups.forEach(g => groups.appendChild(renderGroup(d.pipeline, g)));
  }

  function renderGroup(pipeline, g) {
    const box = el("div", null, "dl-group");
    box.dataset.cause = g.cause;
    if (g.exception) { box.dataset.exception = g.exception; }
    const head = el("h3");
    head.appendChild(el("span", g.cause, "dl-cause"));
    if (g.exception) { head.appendChild(el("span", " " + g.exception, "dl-exception")); }
    head.appendChild(el("span", " · " + g.count + (g.count === 1 ? " message" : " messages"), "dl-count"));
    if (session.actions) {
      const b = el("button", "Replay this group", "danger dl-replay-group");
      b.type = "button";
      b.addEventListener("click", () => replay({pipeline: pipeline, cause: g.cause, exception: g.exception},
          "every dead letter of the group '" + g.cause + (g.exception ? " " + g.exception : "") + "'"));
      head.appendChild(b);
    }
    box.appendChild(head);
    const table = el("table", null, "dl-messages");
    const hr = el("tr");
    ["", "key / message ID", "attempts", "reason", "payload", "headers", ""].forEach(h => hr.appendChild(el("th", h)));
    table.appendChild(hr);
    g.messages.forEach(m => {
      const tr = el("tr", null, "dl-message");
      tr.dataset.id = m.id;
      const pick = el("td");
      if (session.actions) {
        const c = el("input");
        c.type = "checkbox";
        c.className = "dl-pick";
        c.value = m.id;
        pick.appendChild(c);
      }
      tr.appendChild(pick);
      const who = el("td");
      who.appendChild(el("div", m.key || m.messageId || "(no ID)", "dl-key"));
      who.appendChild(el("div", "at " + m.position, "dl-position"));
      tr.appendChild(who);
      tr.appendChild(el("td", m.attempts === null ? "" : m.attempts, "num"));
      tr.appendChild(el("td", m.detail, "dl-detail"));
      const payload = el("td");
      payload.appendChild(el("pre", m.payload, "dl-payload"));
      payload.appendChild(el("div", m.payloadBytes + " bytes" + (m.truncated ? ", first " + m.payload.length
          + " characters shown" : ""), "dl-size"));
      tr.appendChild(payload);
      const headers = el("td");
      const details = el("details");
      details.appendChild(el("summary", Object.keys(m.headers).length + " headers"));
      const dl = el("dl", null, "dl-headers");
      Object.entries(m.headers).forEach(([k, v]) => { dl.appendChild(el("dt", k)); dl.appendChild(el("dd", v)); });
      details.appendChild(dl);
      headers.appendChild(details);
      tr.appendChild(headers);
      const act = el("td");
      if (session.actions) {
        const b = el("button", "Replay", "dl-replay-one");
        b.type = "button";
        b.addEventListener("click", () => replay({pipeline: pipeline, ids: [m.id]},
            "the dead letter '" + (m.key || m.messageId || m.position) + "'"));
        act.appendChild(b);
      }
      tr.appendChild(act);
      table.appendChild(tr);
    });
    box.appendChild(table);
    return box;
  }

  function replaySelected() {
    const ids = Array.from(document.querySelectorAll(".dl-pick:checked")).map(c => c.value);
    if (ids.length === 0) {
      showReplay(null, "Select dead letters first.");
      return;
    }
    replay({pipeline: deadLetters.pipeline, ids: ids}, ids.length + " selected dead letters");
  }

  async function replay(body, what) {
    if (!window.confirm("Replay " + what + "? Each moves back to the pipeline's source and is processed again.")) {
      return;
    }
    showReplay(null, "replaying " + what + "…");
    try {
      const answer = await call("/dead-letters/replay", {method: "POST", headers: csrfHeaders(),
        body: JSON.stringify(body)});
      showReplay(answer, null);
    } catch (e) {
      showReplay(null, "Replay failed: " + e.message, true);
      return;
    }
    await loadDeadLetters();
  }

  function showReplay(answer, note, isError) {
    const r = $("dl-result");
    r.textContent = "";
    if (note) { r.appendChild(el("p", note, isError ? "error" : null)); }
    if (answer) {
      const p = el("p", (answer.ok ? "Done: " : "Not all moved: ") + answer.moved + " moved, " + answer.skipped
          + " skipped, " + answer.failed + " failed" + (answer.incomplete ? ", incomplete" : "") + ".",
          answer.ok ? "dl-ok" : "error");
      p.id = "dl-outcome";
      r.appendChild(p);
      r.appendChild(el("pre", answer.lines.join("\n"), "dl-lines"));
    }
  }

  async function start() {
    $("confirm-cancel").addEventListener("click", () => { $("confirm").hidden = true; });
    $("dl-form").addEventListener("submit", loadDeadLetters);
    $("dl-replay-selected").addEventListener("click", replaySelected);
    $("key-form").addEventListener("submit", lookUp);
    try {
      session = await call("/session");
      const answer = await call("/pipelines");
      pipelines = answer.pipelines;
      if (!answer.keyLookup) {
        $("key-form").hidden = true;
        $("key-result").textContent = "This store cannot show its keys.";
      }
    } catch (e) {
      status("cannot load: " + e.message, true);
      return;
    }
    showSession();
    const select = $("key-pipeline");
    pipelines.forEach(p => {
      const o = el("option", p.name);
      o.value = p.name;
      select.appendChild(o);
      const d = el("option", p.name);
      d.value = p.name;
      $("dl-pipeline").appendChild(d);
      makeCharts(p.name);
    });
    renderPipelines(null);
    try {
      // The last minutes the server kept, so that the charts start full rather than empty.
      (await call("/history")).samples.forEach(record);
    } catch (e) {
      status("no history: " + e.message, true);
    }
    await poll();
    setInterval(poll, INTERVAL_MS);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
