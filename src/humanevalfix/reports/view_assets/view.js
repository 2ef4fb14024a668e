// The viewer of `humanevalfix view`: reads its data from the JSON element and builds the page with
// textContent only. Everything in the data (code, feedback, replies, ids) is text, never HTML.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("view-data").textContent);
  const RUNS = DATA.runs;
  const TWO = RUNS.length === 2;
  const CMP = DATA.compare;
  const WON = new Set(CMP ? CMP.b_wins : []);
  const LOST = new Set(CMP ? CMP.a_wins : []);
  const state = { sort: null, desc: false, selected: null, visible: [] };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }
  const absent = (what) => el("span", { class: "absent", text: what || "absent" });
  const show = (v) => (v === null || v === undefined || v === "" ? absent() : String(v));
  const yesno = (v) => (v === true ? "yes" : v === false ? "no" : null);
  const verdict = (v) => (v ? el("span", { class: v === "pass" ? "pass" : v === "error" ? "error" : "fail", text: v }) : absent());
  const secs = (v) => (typeof v === "number" ? v.toFixed(1) + " s" : null);

  function codeBlock(text, what) {
    if (text === null || text === undefined) return absent(what);
    return el("pre", { class: "code", text: text });
  }
  function diffBlock(text, what) {
    if (text === null || text === undefined) return absent(what);
    if (text === "") return absent("no change");
    const pre = el("pre", { class: "diff" });
    for (const line of text.split("\n")) {
      const cls = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
      pre.appendChild(cls ? el("span", { class: cls, text: line }) : document.createTextNode(line + "\n"));
    }
    return pre;
  }
  function section(label, ...content) {
    return el("div", {}, el("div", { class: "label", text: label }), ...content);
  }

  // ------------------------------------------------------------------ header
  function header() {
    const h = document.getElementById("runs");
    RUNS.forEach((run, i) => {
      const box = el("div", { class: "run" });
      box.appendChild(el("h2", { text: (TWO ? (i === 0 ? "A: " : "B: ") : "") + run.label }));
      const hl = run.headline;
      const n = hl.tasks;
      const cards = el("div", { class: "cards" });
      const card = (name, value) => cards.appendChild(el("div", { class: "card", "data-headline": name }, el("b", { text: value }), name));
      card("first attempt", `${hl.passed_first}/${n}`);
      card("after repair", `${hl.passed}/${n}`);
      card("pass@1+", hl.plus === null ? "absent" : `${hl.plus}/${n}`);
      card("errors", String(hl.errors));
      card("tokens in / out", `${hl.tokens_in} / ${hl.tokens_out}`);
      card("wall time", secs(hl.wall_s) || "absent");
      box.appendChild(cards);
      const kv = el("table", { class: "kv" });
      for (const [k, v] of run.settings) kv.appendChild(el("tr", {}, el("td", { text: k }), el("td", { text: v })));
      const summary = el("pre", { text: run.summary.join("\n") });
      box.appendChild(el("details", {}, el("summary", { text: "settings and summary" }), kv, summary));
      h.appendChild(box);
    });
    if (CMP) {
      const c = el("div", { class: "compare", id: "comparison" });
      c.appendChild(document.createTextNode(`On ${CMP.common} common tasks, B won `));
      c.appendChild(el("b", { "data-count": "won", text: String(CMP.b_wins.length) }));
      c.appendChild(document.createTextNode(" and lost "));
      c.appendChild(el("b", { "data-count": "lost", text: String(CMP.a_wins.length) }));
      const p = typeof CMP.p_value === "number" ? ` (exact McNemar p = ${CMP.p_value.toPrecision(3)})` : "";
      c.appendChild(document.createTextNode(` against A${p}.`));
      for (const note of CMP.notes) c.appendChild(el("div", { class: "help", text: note }));
      h.appendChild(c);
    }
  }

  // ------------------------------------------------------------------ the table
  const COLUMNS = [
    ["verdict", (r) => r.verdict],
    ["pass@1+", (r) => yesno(r.plus)],
    ["first", (r) => yesno(r.passed_first)],
    ["turns", (r) => r.turns],
    ["outcomes", (r) => r.outcomes.join(" ")],
    ["tokens", (r) => (r.tokens_in === null ? null : (r.tokens_in || 0) + (r.tokens_out || 0))],
    ["time", (r) => r.wall_s],
  ];
  // Own properties only: a task id such as "constructor" is data, not the prototype's.
  const rowOf = (i, key) => (i < RUNS.length && Object.prototype.hasOwnProperty.call(RUNS[i].tasks, key) ? RUNS[i].tasks[key] : null);
  const idOf = (key) => (rowOf(0, key) || rowOf(1, key)).id;
  const failed = (key) => RUNS.some((_, i) => rowOf(i, key) && rowOf(i, key).verdict !== "pass");

  function haystack(key) {
    const parts = [];
    RUNS.forEach((_, i) => {
      const r = rowOf(i, key);
      if (!r) return;
      parts.push(r.id, r.bug_type, r.symptoms, r.final_code, r.score_message, r.error);
      for (const t of r.attempts) parts.push(t.code, t.feedback, t.reply, ...(t.reasoning || []));
    });
    return parts.filter((p) => typeof p === "string").join("\n").toLowerCase();
  }
  const HAY = new Map();

  function buildTable() {
    const head = el("tr", {}, el("th", { "data-sort": "id", text: "task" }), el("th", { "data-sort": "bug", text: "bug type" }));
    if (TWO) head.appendChild(el("th", { "data-sort": "delta", text: "B vs A" }));
    RUNS.forEach((_, i) => {
      for (const [name] of COLUMNS) head.appendChild(el("th", { "data-sort": `${i}:${name}`, text: (TWO ? (i ? "B " : "A ") : "") + name }));
    });
    document.getElementById("thead").appendChild(head);
    head.addEventListener("click", (e) => {
      const key = e.target.getAttribute && e.target.getAttribute("data-sort");
      if (!key) return;
      state.desc = state.sort === key ? !state.desc : false;
      state.sort = key;
      render();
    });
    const bugs = new Set();
    const outcomes = new Set();
    for (const key of DATA.order) {
      RUNS.forEach((_, i) => {
        const r = rowOf(i, key);
        if (!r) return;
        if (r.bug_type) bugs.add(r.bug_type);
        r.outcomes.forEach((o) => outcomes.add(o));
      });
    }
    const fill = (id, values) => {
      const sel = document.getElementById(id);
      for (const v of [...values].sort()) sel.appendChild(el("option", { value: v, text: v }));
    };
    fill("filter-bug", bugs);
    fill("filter-outcome", outcomes);
    if (TWO) {
      const st = document.getElementById("filter-status");
      st.appendChild(el("option", { value: "won", text: "won by B" }));
      st.appendChild(el("option", { value: "lost", text: "lost by B" }));
    }
  }

  function sortValue(key, how) {
    if (how === "id") {
      const m = /^(.*?)(\d+)(#\d+)?$/.exec(idOf(key));
      return m ? [m[1], Number(m[2]), m[3] || ""] : [idOf(key), 0, ""];
    }
    if (how === "bug") return (rowOf(0, key) || rowOf(1, key)).bug_type || "";
    if (how === "delta") return WON.has(idOf(key)) ? 1 : LOST.has(idOf(key)) ? -1 : 0;
    const [i, name] = how.split(":");
    const r = rowOf(Number(i), key);
    if (!r) return null;
    return COLUMNS.find((c) => c[0] === name)[1](r);
  }
  function compare(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (Array.isArray(a)) {
      for (let i = 0; i < a.length; i++) {
        const c = compare(a[i], b[i]);
        if (c) return c;
      }
      return 0;
    }
    return a < b ? -1 : 1;
  }

  function matches(key) {
    const status = document.getElementById("filter-status").value;
    const bug = document.getElementById("filter-bug").value;
    const outcome = document.getElementById("filter-outcome").value;
    const query = document.getElementById("search").value.trim().toLowerCase();
    const id = idOf(key);
    if (status === "failed" && !failed(key)) return false;
    if (status === "passed" && failed(key)) return false;
    if (status === "won" && !WON.has(id)) return false;
    if (status === "lost" && !LOST.has(id)) return false;
    if (bug && !RUNS.some((_, i) => rowOf(i, key) && rowOf(i, key).bug_type === bug)) return false;
    if (outcome && !RUNS.some((_, i) => rowOf(i, key) && rowOf(i, key).outcomes.includes(outcome))) return false;
    if (query) {
      if (!HAY.has(key)) HAY.set(key, haystack(key));
      if (!HAY.get(key).includes(query)) return false;
    }
    return true;
  }

  function cell(value, numeric) {
    if (value === null || value === undefined || value === "") return el("td", {}, absent());
    return el("td", numeric ? { class: "num" } : {}, typeof value === "number" ? String(Math.round(value * 10) / 10) : String(value));
  }

  function render() {
    let keys = DATA.order.filter(matches);
    if (state.sort) {
      const how = state.sort;
      keys = keys.map((k) => [k, sortValue(k, how)]).sort((x, y) => compare(x[1], y[1]) * (state.desc ? -1 : 1)).map((x) => x[0]);
    }
    state.visible = keys;
    const body = document.getElementById("tbody");
    body.replaceChildren();
    for (const key of keys) {
      const any = rowOf(0, key) || rowOf(1, key);
      const tr = el("tr", { "data-task-id": key }, el("td", { text: key }), cell(any.bug_type));
      if (TWO) {
        const id = any.id;
        tr.appendChild(WON.has(id) ? el("td", { class: "won", text: "won" }) : LOST.has(id) ? el("td", { class: "lost", text: "lost" }) : el("td", {}));
      }
      RUNS.forEach((_, i) => {
        const r = rowOf(i, key);
        for (const [name, get] of COLUMNS) {
          if (!r) tr.appendChild(el("td", {}, absent("not run")));
          else if (name === "verdict") tr.appendChild(el("td", {}, verdict(r.verdict)));
          else tr.appendChild(cell(get(r), ["turns", "tokens", "time"].includes(name)));
        }
      });
      if (key === state.selected) tr.className = "sel";
      tr.addEventListener("click", () => select(key));
      body.appendChild(tr);
    }
    document.getElementById("shown-count").textContent = `${keys.length} of ${DATA.order.length} tasks`;
  }

  // ------------------------------------------------------------------ one task
  function transcript(r, i) {
    const box = el("div", { class: "side", "data-run": String(i) });
    if (TWO) box.appendChild(el("h3", { text: (i ? "B: " : "A: ") + RUNS[i].label }));
    if (!r) {
      box.appendChild(absent("this run has no record of the task"));
      return box;
    }
    box.appendChild(
      el("div", { class: "meta" }, verdict(r.verdict), ` pass@1+: `, show(yesno(r.plus)), ` · first attempt: `, show(yesno(r.passed_first)),
        ` · turns: `, show(r.turns), ` · stop: `, show(r.stop_reason), ` · tool mode: `, show(r.tool_mode), ` · bug: `, show(r.bug_type)));
    if (r.error) box.appendChild(section("infrastructure error", codeBlock(r.error)));
    for (const t of r.attempts) {
      const turn = el("div", { class: "turn", "data-turn": String(t.turn) });
      turn.appendChild(el("div", { class: "label", text: `turn ${t.turn}` }));
      turn.appendChild(el("div", { class: "meta" }, "outcome: ", show(t.outcome), " · temperature: ", show(t.temperature),
        " · strategy: ", show(t.strategy), " · via: ", show(t.via), " · redrawn: ", t.redrawn.length ? t.redrawn.join(", ") : "none",
        " · tokens in/out: ", show(t.tokens_in), "/", show(t.tokens_out)));
      for (const text of t.reasoning || []) turn.appendChild(section("reasoning", codeBlock(text)));
      if (t.reply !== null) turn.appendChild(section("reply", codeBlock(t.reply)));
      turn.appendChild(section("code that ran", codeBlock(t.code, "no code this turn")));
      if (t.code !== null) {
        turn.appendChild(section("diff against the buggy code", diffBlock(t.diff_buggy, "buggy code absent")));
        turn.appendChild(section("diff against the previous code", diffBlock(t.diff_previous, "no earlier code")));
      }
      turn.appendChild(section("feedback", codeBlock(t.feedback, "no feedback")));
      box.appendChild(turn);
    }
    if (!r.attempts.length) box.appendChild(absent("no turns recorded"));
    const end = el("div", { class: "final" });
    end.appendChild(el("div", { class: "label" }, "final verdict: ", verdict(r.verdict), " · pass@1+: ", show(yesno(r.plus))));
    end.appendChild(section("final code against the buggy code", diffBlock(r.final_diff, "no final code")));
    if (r.score_message) end.appendChild(section("the full tests said", codeBlock(r.score_message)));
    box.appendChild(end);
    if (r.messages) {
      const conv = el("details", {}, el("summary", { text: `the conversation (${r.messages.length} messages, from the trace)` }));
      for (const m of r.messages) conv.appendChild(section(m.role, codeBlock(m.content, "no content")));
      box.appendChild(conv);
    }
    return box;
  }

  function select(key, scroll) {
    if (!rowOf(0, key) && !rowOf(1, key)) return;
    state.selected = key;
    const panel = document.getElementById("task");
    panel.replaceChildren();
    const any = rowOf(0, key) || rowOf(1, key);
    panel.appendChild(el("h2", { id: "task-title", text: key }));
    if (TWO) {
      const id = any.id;
      panel.appendChild(el("div", { class: WON.has(id) ? "won" : LOST.has(id) ? "lost" : "help", text: WON.has(id) ? "won by B" : LOST.has(id) ? "lost by B" : "same result in both runs" }));
    }
    panel.appendChild(section("buggy code", codeBlock(any.buggy_code, "buggy code absent")));
    const tests = RUNS.map((_, i) => rowOf(i, key)).find((r) => r && r.tests);
    panel.appendChild(section("tests as the model saw them", codeBlock(tests ? tests.tests : null, "not in the results (dataset not here, or not shown by the protocol)")));
    const doc = RUNS.map((_, i) => rowOf(i, key)).find((r) => r && r.docstring);
    if (doc) panel.appendChild(section("docstring as the model saw it", codeBlock(doc.docstring)));
    const sides = el("div", { class: "sides" });
    RUNS.forEach((_, i) => sides.appendChild(transcript(rowOf(i, key), i)));
    panel.appendChild(sides);
    for (const tr of document.querySelectorAll("tr.sel")) tr.className = "";
    for (const tr of document.querySelectorAll("tbody tr")) {
      if (tr.getAttribute("data-task-id") === key) {
        tr.className = "sel";
        if (scroll) tr.scrollIntoView({ block: "nearest" });
      }
    }
    panel.scrollTop = 0;
    if (location.hash !== "#" + encodeURIComponent(key)) history.replaceState(null, "", "#" + encodeURIComponent(key));
  }

  function step(delta, onlyFailed) {
    const keys = state.visible;
    if (!keys.length) return;
    let at = keys.indexOf(state.selected);
    for (let n = 0; n < keys.length; n++) {
      at = at < 0 ? (delta > 0 ? 0 : keys.length - 1) : (at + delta + keys.length) % keys.length;
      if (!onlyFailed || failed(keys[at])) return select(keys[at], true);
    }
  }

  document.addEventListener("keydown", (e) => {
    if (e.target && ["INPUT", "SELECT", "TEXTAREA"].includes(e.target.tagName)) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "j") step(1, false);
    else if (e.key === "k") step(-1, false);
    else if (e.key === "f") step(1, true);
    else return;
    e.preventDefault();
  });

  header();
  buildTable();
  // The search box on "input" only: its "change" fires when it loses focus, on the mousedown of a
  // click on a row, and rebuilding the rows then would swallow that click.
  document.getElementById("search").addEventListener("input", render);
  for (const id of ["filter-status", "filter-bug", "filter-outcome"]) document.getElementById(id).addEventListener("change", render);
  render();
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (wanted) select(wanted, true);
  document.body.setAttribute("data-ready", "1");
})();
