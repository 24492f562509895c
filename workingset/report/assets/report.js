// The report page: charts (plotly.js) over compare's numbers, and the context viewer.
// Data: #ws-compare is `workingset compare --json`'s object; #ws-report holds the cache
// series per model and strategy, the budgets and the viewer's texts as line edits.
"use strict";
(function () {
  const compare = JSON.parse(document.getElementById("ws-compare").textContent);
  const report = JSON.parse(document.getElementById("ws-report").textContent);
  const strategies = compare.strategies;
  const labels = compare.contexts.map((c) => c.request_id);
  const turns = labels.map((_, i) => i + 1);  // a numeric axis: far faster to lay out than one category per turn
  const models = Object.keys(report.series);
  const lines = report.viewer.lines;
  const COLORS = { read: "#2da44e", written: "#d4a72c", uncached: "#57606a" };
  const PALETTE = ["#0969da", "#cf222e", "#8250df", "#1a7f37", "#bc4c00", "#57606a", "#bf3989", "#0a3069"];
  const CONFIG = { displaylogo: false, responsive: true };
  const $ = (id) => document.getElementById(id);
  const fmt = (x) => (typeof x === "number" ? x.toLocaleString("en-US", { maximumFractionDigits: 1 }) : "");
  // The viewer opens on the run's own encoder when the page shows it.
  const opening = strategies.includes(report.own) ? report.own : strategies[strategies.length > 1 ? 1 : 0];
  const state = { model: models[0], turn: labels.length - 1, strategy: opening };

  function option(select, value, text) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }

  // --- texts: decode a strategy's turn from the previous turn's lines and its edits ----------
  const decoded = {};
  function turnLines(strategy, turn) {
    const done = (decoded[strategy] = decoded[strategy] || []);
    for (let i = done.length; i <= turn; i++) {
      const prev = i ? done[i - 1] : [];
      const out = [];
      for (const op of report.viewer.turns[strategy][i].edits) {
        if (typeof op === "number") out.push(lines[op]);
        else if (op[0] >= 0) for (let k = 0; k < op[1]; k++) out.push(lines[op[0] + k]);
        else for (let k = 0, a = -1 - op[0]; k < op[1]; k++) out.push(prev[a + k]);
      }
      done.push(out);
    }
    return done[turn];
  }

  // --- summary ---------------------------------------------------------------------------------
  function largest(s) { return Math.max(...compare.contexts.map((c) => c.sizes[s].tokens)); }
  function largestChars(s) { return Math.max(...compare.contexts.map((c) => c.sizes[s].chars)); }

  function drawTotals() {
    const head = ["strategy", "tokens sent", "read", "written", "uncached", "effective cost", "vs " + compare.base, "largest context (tokens)",
      "lowest availability"];
    const lowest = (s) => { const a = compare.availability && compare.availability[s]; return a && a.min_reachable_share != null ? (100 * a.min_reachable_share).toFixed(1) + "%" : ""; };
    const rows = strategies.map((s) => {
      const t = compare.cache[state.model].total[s];
      const change = s === compare.base ? "" : t.change_percent == null ? "n/a" : (t.change_percent > 0 ? "+" : "") + t.change_percent.toFixed(1) + "%";
      return [s, fmt(t.tokens), fmt(t.read_tokens), fmt(t.written_tokens), fmt(t.uncached_tokens), fmt(t.effective_cost), change, fmt(largest(s)), lowest(s)];
    });
    const table = $("totals");
    table.innerHTML = "";
    [head, ...rows].forEach((row, i) => {
      const tr = table.insertRow();
      row.forEach((cell) => {
        const td = document.createElement(i ? "td" : "th");
        td.textContent = cell;
        tr.appendChild(td);
      });
    });
  }

  // --- charts ------------------------------------------------------------------------------------
  function drawTokens() {
    const series = report.series[state.model];
    const traces = [], annotations = [], n = strategies.length;
    // the tallest stacked bar of any strategy sets every panel's scale, so bars compare across panels
    const top = Math.max(1, ...strategies.flatMap((s) => series[s].read.map((r, i) => r + series[s].written[i] + series[s].uncached[i])));
    const layout = { barmode: "stack", height: 90 + 150 * n, margin: { t: 40, l: 70, r: 10, b: 40 },
      grid: { rows: n, columns: 1, subplots: strategies.map((_, k) => ["xy" + (k ? k + 1 : "")]) },
      legend: { orientation: "h", x: 0.5, xanchor: "center", y: 1, yanchor: "bottom" }, annotations };  // clear of the toolbar
    strategies.forEach((s, k) => {
      const yaxis = "y" + (k ? k + 1 : "");
      for (const part of ["read", "written", "uncached"]) {
        traces.push({ type: "bar", name: part, x: turns, y: series[s][part], yaxis, xaxis: "x", customdata: labels,
          marker: { color: COLORS[part] }, legendgroup: part, showlegend: k === 0,
          hovertemplate: s + " %{customdata}<br>" + part + ": %{y:,}<extra></extra>" });
      }
      layout["yaxis" + (k ? k + 1 : "")] = { title: { text: "tokens" }, range: [0, top * 1.05] };  // one scale for every panel
      annotations.push({ text: "<b>" + s + "</b>", xref: "paper", yref: yaxis + " domain", x: 0, y: 1, xanchor: "left", yanchor: "bottom", showarrow: false });
    });
    layout.xaxis = { title: { text: "turn" } };
    return Plotly.react("chart-tokens", traces, layout, CONFIG);
  }

  function drawCost() {
    const series = report.series[state.model];
    const traces = strategies.map((s, k) => {
      let acc = 0;
      return { type: "scatter", mode: "lines", name: s, x: turns, y: series[s].cost.map((c) => (acc += c)), customdata: labels,
        line: { color: PALETTE[k % PALETTE.length] }, hovertemplate: s + " %{customdata}<br>cumulative cost: %{y:,.1f}<extra></extra>" };
    });
    return Plotly.react("chart-cost", traces, { height: 360, margin: { t: 40, l: 70, r: 10, b: 50 },
      xaxis: { title: { text: "turn" } }, yaxis: { title: { text: "full-price tokens" } } }, CONFIG);
  }

  function drawLargest() {
    // Tokens, as every other chart; a budget (characters) is drawn over its own bar only, in tokens at
    // that strategy's own characters per token of its largest context, so no two labels share a line.
    const shapes = [], ticks = strategies.slice();
    strategies.forEach((s, k) => {
      const budget = report.budgets[s];
      if (budget == null) return;
      const tokens = Math.round((budget * largest(s)) / Math.max(1, largestChars(s)));
      shapes.push({ type: "line", xref: "x", x0: k - 0.45, x1: k + 0.45, y0: tokens, y1: tokens, line: { color: "#cf222e", dash: "dash" } });
      ticks[k] = s + "<br>budget ≈ " + fmt(tokens);  // under its own bar: a label never covers another
    });
    const trace = { type: "bar", x: strategies, y: strategies.map(largest), marker: { color: strategies.map((_, k) => PALETTE[k % PALETTE.length]) },
      customdata: strategies.map(largestChars), hovertemplate: "%{x}<br>%{y:,} tokens, %{customdata:,} chars<extra></extra>" };
    return Plotly.react("chart-largest", [trace], { height: 380, margin: { t: 40, l: 70, r: 10, b: 110 }, shapes,
      xaxis: { tickmode: "array", tickvals: strategies, ticktext: ticks, tickangle: -45 },
      yaxis: { title: { text: "tokens" }, rangemode: "tozero" } }, CONFIG);
  }

  function reachable(a) {
    const total = a.visible + a.addressable + a.gone;
    return total ? (100 * (a.visible + a.addressable)) / total : null;
  }

  function drawAvailability() {
    // Per strategy and turn: the share of identifiers from earlier evidence still visible in
    // full or addressable through the index (compare --availability); the rest is gone.
    const av = compare.availability;
    if (!av) return null;
    $("availability-section").hidden = false;
    const traces = strategies.filter((s) => av[s]).map((s) => ({
      type: "scatter", mode: "lines", name: s, x: turns, y: av[s].contexts.map(reachable), customdata: labels,
      line: { color: PALETTE[strategies.indexOf(s) % PALETTE.length] },
      hovertemplate: s + " %{customdata}<br>visible or addressable: %{y:.1f}%<extra></extra>" }));
    return Plotly.react("chart-availability", traces, { height: 320, yaxis: { title: { text: "% visible or addressable" }, range: [0, 105] },
      xaxis: { title: { text: "turn" } }, margin: { t: 40, l: 70, r: 10, b: 50 } }, CONFIG);
  }

  function drawTradeoff() {
    // Each strategy's bill with recalls against its share of used identifiers in view (compare --use).
    const f = report.tradeoff && report.tradeoff[state.model];
    if (!f) return null;
    $("tradeoff-section").hidden = false;
    return Plotly.react("chart-tradeoff", f.data, f.layout, CONFIG);
  }

  // --- viewer ------------------------------------------------------------------------------------
  function span(cls, text, label) {
    const el = document.createElement("span");
    if (cls) el.className = cls;
    if (text) el.textContent = text;
    if (label) el.dataset.label = label;
    return el;
  }

  function drawContext(text, entry) {
    const served = entry.served[state.model] || [0, 0];
    const cuts = new Map();  // offset -> marks placed before the character at that offset
    const mark = (at, el) => { if (!cuts.has(at)) cuts.set(at, []); cuts.get(at).push(el); };
    const names = new Map(entry.names);  // section index -> its name, where the name changes
    let start = 0, name = "";
    entry.sections.forEach((end, k) => {
      name = names.get(k) || name;
      mark(start, span("sec", "", name));
      start = end;
    });
    for (const at of entry.breakpoints) mark(at, span("bp"));
    const offsets = new Set([0, text.length, served[0], served[1], ...cuts.keys()]);
    const points = [...offsets].filter((x) => x >= 0 && x <= text.length).sort((a, b) => a - b);
    const pre = $("context");
    const frag = document.createDocumentFragment();
    for (let i = 0; i < points.length; i++) {
      const at = points[i];
      // breakpoints go after the text they end, section labels before the text they start
      for (const el of cuts.get(at) || []) frag.appendChild(el);
      if (i + 1 < points.length) {
        const cls = points[i + 1] <= served[0] ? "read" : points[i + 1] <= served[1] ? "written" : "";
        frag.appendChild(span(cls, text.slice(at, points[i + 1])));
      }
    }
    pre.replaceChildren(frag);
  }

  function drawDiff(entry, prev, cur) {
    const rows = [];  // [kind, line]
    let p = 0;
    const push = (kind, line) => rows.push([kind, line]);
    for (const op of entry.edits) {
      if (typeof op === "number") push("add", lines[op]);
      else if (op[0] >= 0) for (let k = 0; k < op[1]; k++) push("add", lines[op[0] + k]);
      else {
        const a = -1 - op[0];
        for (; p < a; p++) push("del", prev[p]);
        for (let k = 0; k < op[1]; k++) push("same", prev[a + k]);
        p = a + op[1];
      }
    }
    for (; p < prev.length; p++) push("del", prev[p]);
    const added = rows.filter((r) => r[0] === "add").length, deleted = rows.filter((r) => r[0] === "del").length;
    $("diff-stats").textContent = state.turn ? "(+" + added + " \u2212" + deleted + " lines)" : "(first turn: all new)";
    const keep = rows.map(() => false), CONTEXT = 2;
    rows.forEach((r, i) => { if (r[0] !== "same") for (let k = Math.max(0, i - CONTEXT); k <= Math.min(rows.length - 1, i + CONTEXT); k++) keep[k] = true; });
    const frag = document.createDocumentFragment();
    let skipped = 0;
    const flush = () => { if (skipped) frag.appendChild(span("skip", "\u2026 " + skipped + " unchanged lines\n")); skipped = 0; };
    rows.forEach((r, i) => {
      if (!keep[i]) { skipped++; return; }
      flush();
      frag.appendChild(span(r[0] === "same" ? "" : r[0], (r[0] === "add" ? "+ " : r[0] === "del" ? "- " : "  ") + r[1] + "\n"));
    });
    flush();
    $("diff").replaceChildren(frag);
  }

  function availabilityNote(s, i) {
    const a = compare.availability && compare.availability[s] && compare.availability[s].contexts[i];
    return a ? " Identifiers of earlier evidence: " + fmt(a.visible) + " visible, " + fmt(a.addressable) + " addressable, " + fmt(a.gone) + " gone." : "";
  }

  // What an exported run's journal recorded of the turn (report.record is null for a plain run).
  function drawRecord(i) {
    const box = $("turn-record"), rec = report.record && report.record.turns[i];
    const line = (name, text) => {
      const p = document.createElement("p");
      p.appendChild(span("label", name + ": "));
      p.appendChild(document.createTextNode(text));
      box.appendChild(p);
    };
    box.replaceChildren();
    if (!rec) {
      delete box.dataset.rejections;
      line("Decision, rejections and outcome", "not recorded (a plain run; a run written by workingset export records them)");
      return;
    }
    line("Decision", rec.decision || "none accepted");
    line("Rejected answers", rec.rejections.length ? rec.rejections.map((r) => r.code + ": " + r.message).join(" | ") : "none");
    line("Outcome", rec.outcome);
    box.dataset.rejections = String(rec.rejections.length);
  }

  function drawViewer() {
    const s = state.strategy, i = state.turn;
    const entry = report.viewer.turns[s][i];
    const cur = turnLines(s, i), prev = i ? turnLines(s, i - 1) : [];
    const text = cur.join("\n");
    drawContext(text, entry);
    drawDiff(entry, prev, cur);
    const ctx = compare.contexts[i], z = report.series[state.model][s];
    $("turn-info").textContent = ctx.request_id + " (hypothesis " + ctx.hypothesis + ", file " + (ctx.file || "") + ") under " + s + ": " +
      fmt(ctx.sizes[s].chars) + " chars, " + fmt(ctx.sizes[s].tokens) + " tokens; " + state.model + " cache: " + fmt(z.read[i]) + " read, " +
      fmt(z.written[i]) + " written, " + fmt(z.uncached[i]) + " uncached; effective cost " + fmt(z.cost[i]) + "." + availabilityNote(s, i);
    const ev = $("evidence");
    ev.replaceChildren();
    const line = (name, count, text) => {
      const p = document.createElement("p");
      p.appendChild(document.createTextNode(name + " (" + count + "): "));
      p.appendChild(span("", text || "none"));
      ev.appendChild(p);
    };
    // IDs come as ranges of consecutive IDs ("E000001\u2013E000160")
    const count = (ranges) => ranges.reduce((n, r) => {
      const [a, b] = r.split("\u2013").map((x) => Number((x.match(/\d+$/) || ["0"])[0]));
      return n + (r.includes("\u2013") ? b - a + 1 : 1);
    }, 0);
    if (entry.shown) {
      line("Evidence shown in full", count(entry.shown), entry.shown.join(" "));
      line("Evidence only indexed (recall brings it back)", count(entry.indexed), entry.indexed.join(" "));
    } else line("Earlier outputs masked or omitted, gone for good", entry.gone, entry.gone ? "their outputs are no longer in the context" : "");
    drawRecord(i);
    $("turn").value = String(i);
    $("strategy").value = s;
    $("viewer").dataset.turn = ctx.request_id;
    $("viewer").dataset.strategy = s;
  }

  // Resolves when every chart has drawn.
  function drawModel() {
    const m = compare.cache[state.model];
    $("model-line").textContent = state.model === "ideal"
      ? "ideal: the longest common token prefix with the previous context is read; nothing is written."
      : state.model + ": TTL " + m.ttl + (m.timed ? " (the contexts' capture times)" : " (no distinct times: all turns within the TTL)") +
        "; nothing under " + fmt(m.cache_min) + " tokens cached; reads at " + m.cached_price + "\u00d7, writes at " + m.write_price + "\u00d7 the full price.";
  }

  function drawVerdict() {
    $("verdict-line").textContent = "Verdict: " + report.verdicts[state.model] + ".";
  }

  function drawAll() {
    drawVerdict();
    drawModel();
    drawTotals();
    drawViewer();
    return Promise.all([drawTokens(), drawCost(), drawLargest(), drawAvailability(), drawTradeoff()]);
  }

  // --- controls ----------------------------------------------------------------------------------
  models.forEach((m) => option($("model"), m, m));
  labels.forEach((l, i) => option($("turn"), String(i), l + " (" + compare.contexts[i].hypothesis + ")"));
  strategies.forEach((s) => option($("strategy"), s, s));
  $("summary-line").textContent = labels.length + " contexts; tokens: " + compare.encoding + "; cached tokens at " + compare.cached_price +
    "\u00d7 the full price; recall selections " + (compare.recall ? "kept" : "removed") + "; changes relative to " + compare.base + ".";
  $("outcome-line").textContent = "Outcome: " + (report.record ? report.record.outcome || "not recorded (the journal has no end line)"
    : "not recorded (a plain run; a run written by workingset export records each turn's decision, rejections and outcome)") +
    (report.record && report.record.lifecycle ? " \u00b7 " + report.record.lifecycle : "");
  $("model").addEventListener("change", (e) => { state.model = e.target.value; drawAll(); });
  $("turn").addEventListener("change", (e) => { state.turn = Number(e.target.value); drawViewer(); });
  $("strategy").addEventListener("change", (e) => { state.strategy = e.target.value; drawViewer(); });
  $("prev").addEventListener("click", () => { if (state.turn > 0) { state.turn--; drawViewer(); } });
  $("next").addEventListener("click", () => { if (state.turn < labels.length - 1) { state.turn++; drawViewer(); } });
  drawAll().then(() => {
    $("chart-tokens").on("plotly_click", (ev) => {
      const pt = ev.points[0];
      state.turn = pt.pointIndex;
      state.strategy = strategies[Math.floor(pt.curveNumber / 3)];
      drawViewer();
      $("viewer").scrollIntoView();
    });
    window.wsReadyMs = performance.now();  // since navigation started: the benchmark's load time
    document.body.dataset.ready = "true";  // the browser test waits for this
  });
})();
