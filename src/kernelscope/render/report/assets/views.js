// DOM views: breadcrumb, the grouped table, bottom-up and sandwich trees, source, findings, run info.
// Every name is set with textContent: names are text, never markup.

const MAX_ROWS = 1000;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function shortLabel(s) { return s.length > 2000 ? s.slice(0, 2000) + "…" : s; }

function groupPairs(pairs, step, label) {
  const groups = new Map();
  for (const [node, w] of pairs) {
    const next = step(node);
    for (const [n2, w2] of next === null ? [] : next(w)) {
      const key = label(n2);
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { label: key, value: 0, pairs: [] }));
      g.value += w2; g.pairs.push([n2, w2]);
    }
  }
  return [...groups.values()].sort((a, b) => b.value - a.value);
}

function treeList(container, items, expand, fmt) {
  const ul = el("ul");
  for (const it of items.slice(0, 300)) {
    const li = el("li"), row = el("div");
    const name = el("span", "ks-name", "▸ " + shortLabel(it.label));
    name.title = shortLabel(it.label);
    row.append(el("span", "ks-val", fmt(it.value)), name);
    row.addEventListener("click", () => {
      if (li.childElementCount > 1) { li.lastElementChild.remove(); name.textContent = "▸ " + shortLabel(it.label); return; }
      const kids = expand(it.pairs);
      name.textContent = (kids.length ? "▾ " : "· ") + shortLabel(it.label);
      if (kids.length) treeList(li, kids, expand, fmt);
    });
    li.append(row); ul.append(li);
  }
  if (items.length > 300) ul.append(el("li", "ks-hint", `… ${items.length - 300} more`));
  container.append(ul);
}

class Views {
  constructor(app) { this.app = app; this.rows = []; }

  renderCrumbs() {
    const app = this.app, t = app.tree, box = byId("ks-crumbs");
    box.replaceChildren();
    const chain = [];
    for (let a = app.focus; a >= 0; a = t.parent[a]) chain.push(a);
    chain.reverse().forEach((node, i) => {
      if (i) box.append(" › ");
      const a = el("a", null, node === 0 ? "all" : shortLabel(t.label(node)).slice(0, 120));
      a.addEventListener("click", () => app.setFocus(node));
      box.append(a);
    });
    if (app.focus !== 0) {
      const reset = el("button", null, "reset zoom"); reset.type = "button"; reset.id = "ks-reset";
      reset.addEventListener("click", () => app.setFocus(0));
      box.append(" ", reset);
    }
  }

  // Rows: {key, values: {metric: v}, nodes: derived node list | null, base: base node list | null}
  tableRows() {
    const app = this.app, t = app.tree, mode = app.state.mode, by = app.state.group, names = app.model.metricNames;
    const rows = new Map();
    if (by === "frame") {
      // one row per distinct label; inclusive counts a label once per path (not again when nested)
      const lid = app.model.labelIds, L = app.model.labelNames.length, n = t.n;
      const vals = {}; for (const m of names) vals[m] = new Float64Array(L);
      const seen = new Uint8Array(L), open = new Int32Array(L);
      const incs = {}; for (const m of names) incs[m] = mode === "self" ? t.ex[m] : t.incl(m);
      const V = names.map((m) => vals[m]), I = names.map((m) => incs[m]), M = names.length, self = mode === "self";
      const stack = new Int32Array(2 * n + 2), frame = t.frame, children = t.children;
      let sp = 0;
      stack[sp++] = 0;
      while (sp) {
        const x = stack[--sp];
        if (x < 0) { open[lid[frame[~x]]]--; continue; }
        if (x) {
          const l = lid[frame[x]];
          seen[l] = 1;
          if (self || open[l] === 0) for (let k = 0; k < M; k++) V[k][l] += I[k][x];
          open[l]++;
          stack[sp++] = ~x;
        }
        const kids = children[x];
        for (let i = kids.length - 1; i >= 0; i--) stack[sp++] = kids[i];
      }
      for (let l = 0; l < L; l++) {
        if (!seen[l]) continue;
        const values = {}; for (const m of names) values[m] = vals[m][l];
        rows.set(l, { key: app.model.labelNames[l], label: l, values: values, nodes: null, base: null });
      }
    } else {
      const g = app.data.groups[by], model = app.model;
      for (let i = 0; i < model.n; i++) {
        const k = g.node[i], key = k < 0 ? `(no ${by})` : g.keys[k];
        let r = rows.get(key);
        if (!r) rows.set(key, (r = { key: key, values: {}, nodes: null, base: [] }));
        r.base.push(i);
        for (const m of names) {
          if (m === "count" && g.own && !g.own[i]) continue;  // calls of the key's own frames only
          r.values[m] = (r.values[m] || 0) + model.base[m][i];
        }
      }
    }
    const out = [...rows.values()];
    for (const r of out) {
      const time = r.values.time_ns;
      if (time > 0 && "flops" in r.values) r.values["TFLOP/s"] = (r.values.flops / time) * 1e-3;
      if (time > 0 && "bytes" in r.values) r.values["GB/s"] = r.values.bytes / time;
    }
    return out.filter((r) => names.some((m) => r.values[m]));
  }

  renderTable() {
    const app = this.app, table = byId("ks-table"), s = app.state;
    const rows = this.tableRows();
    const cols = [...app.model.metricNames];
    for (const rate of Object.keys(RATES)) if (rows.some((r) => rate in r.values)) cols.push(rate);
    const sortCol = s.sortCol || s.metric;
    const key = (r) => sortCol === "name" ? r.key : (r.values[sortCol] || 0);
    rows.sort((a, b) => { const x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * s.sortDir; });
    const totalMetric = widthMetric(s.metric), total = app.tree.incl(totalMetric)[0];
    const head = el("tr");
    const hcols = [["name", s.group === "frame" ? "frame" : s.group], ...cols.map((c) => [c, c]), ["%", `% ${totalMetric}`]];
    for (const [id, text] of hcols) {
      const th = el("th", null, text);
      th.dataset.col = id;
      if (id === sortCol) th.setAttribute("aria-sort", s.sortDir < 0 ? "descending" : "ascending");
      if (id !== "%") th.addEventListener("click", () => { s.sortDir = s.sortCol === id || (!s.sortCol && id === s.metric) ? -s.sortDir : -1; s.sortCol = id; this.renderTable(); app.writeHash(); });
      head.append(th);
    }
    table.tHead.replaceChildren(head);
    const body = document.createDocumentFragment();
    this.rows = rows.slice(0, MAX_ROWS);
    this.rows.forEach((r, i) => {
      const tr = el("tr");
      tr.dataset.index = String(i);
      const name = el("td", null, shortLabel(r.key)); name.title = shortLabel(r.key);
      tr.append(name);
      for (const c of cols) tr.append(el("td", null, c in r.values ? fmtValue(c, r.values[c]) : ""));
      const v = r.values[totalMetric] || 0;
      tr.append(el("td", null, total > 0 ? (100 * v / total).toFixed(1) + "%" : ""));
      tr.addEventListener("click", () => this.pickRow(i, tr));
      body.append(tr);
    });
    table.tBodies[0].replaceChildren(body);
    byId("ks-table-info").textContent = rows.length > MAX_ROWS ? `showing ${MAX_ROWS} of ${rows.length} rows` : `${rows.length} rows`;
  }

  pickRow(i, tr) {
    const app = this.app, r = this.rows[i], t = app.tree;
    for (const x of byId("ks-table").querySelectorAll("tr.ks-selected")) x.classList.remove("ks-selected");
    tr.classList.add("ks-selected");
    let nodes;
    if (r.base) nodes = [...new Set(r.base.map((b) => t.map[b]))].filter((d) => d > 0);
    else { nodes = []; const lid = app.model.labelIds; for (let i = 1; i < t.n; i++) if (lid[t.frame[i]] === r.label) nodes.push(i); }
    app.pick = nodes;
    app.selection = nodes;
    app.refresh();
  }

  selectRowOf(node) {
    const app = this.app, label = app.tree.label(node);
    for (const x of byId("ks-table").querySelectorAll("tr.ks-selected")) x.classList.remove("ks-selected");
    if (app.state.group !== "frame") return;
    const i = this.rows.findIndex((r) => r.key === label);
    if (i >= 0) byId("ks-table").tBodies[0].rows[i].classList.add("ks-selected");
  }

  fmt() { const m = widthMetric(this.app.state.metric); return (v) => fmtValue(m, v); }

  renderBottomUp() {
    const app = this.app, t = app.tree, m = widthMetric(app.state.metric), ex = t.exOf(m);
    const box = byId("ks-bottomup"); box.replaceChildren();
    const leaves = [];
    for (let i = 1; i < t.n; i++) if (ex[i]) leaves.push([i, ex[i]]);
    const label = (n) => t.label(n);
    const up = (pairs) => groupPairs(pairs, (n) => (t.parent[n] > 0 ? (w) => [[t.parent[n], w]] : null), label);
    treeList(box, groupPairs(leaves, (n) => (w) => [[n, w]], label), up, this.fmt());
  }

  renderSandwich() {
    const app = this.app, t = app.tree, inc = t.incl(widthMetric(app.state.metric));
    const callers = byId("ks-callers"), callees = byId("ks-callees");
    callers.replaceChildren(); callees.replaceChildren();
    if (!app.selection || !app.selection.length) { callers.append(el("p", "ks-hint", "nothing selected")); return; }
    const chosen = new Set(app.selection);
    const top = app.selection.filter((n) => { for (let a = t.parent[n]; a > 0; a = t.parent[a]) if (chosen.has(a)) return false; return true; });
    const root = groupPairs(top.map((n) => [n, inc[n]]), () => (w) => [[top[0], w]], () => (top.length ? t.label(top[0]) : ""));
    root[0].pairs = top.map((n) => [n, inc[n]]);
    const label = (n) => t.label(n);
    const up = (pairs) => groupPairs(pairs, (n) => (t.parent[n] > 0 ? (w) => [[t.parent[n], w]] : null), label);
    const down = (pairs) => groupPairs(pairs, (n) => () => t.children[n].map((c) => [c, inc[c]]), label);
    treeList(callers, root, up, this.fmt());
    treeList(callees, root, down, this.fmt());
  }

  renderSource() {
    const app = this.app, box = byId("ks-source"), src = app.data.sources, g = app.data.groups.line;
    box.replaceChildren();
    const files = Object.keys(src || {});
    if (!files.length || !g) { box.append(el("p", "ks-hint", "No source captured: the profile's files were not readable when the report was written.")); return; }
    const m = widthMetric(app.state.metric), col = app.model.base[m] || new Float64Array(app.model.n);
    const cost = new Map();
    for (let i = 0; i < app.model.n; i++) if (g.node[i] >= 0 && col[i]) { const k = g.keys[g.node[i]]; cost.set(k, (cost.get(k) || 0) + col[i]); }
    const fileCost = (f) => src[f].reduce((s, run) => s + run.slice(1).reduce((s2, _, j) => s2 + (cost.get(`${f}:${run[0] + j}`) || 0), 0), 0);
    files.sort((a, b) => fileCost(b) - fileCost(a));
    for (const f of files) {
      box.append(el("h3", null, `${f} — ${fmtValue(m, fileCost(f))}`));
      const table = el("table", "ks-src");
      for (const run of src[f]) {
        run.slice(1).forEach((text, j) => {
          const line = run[0] + j, c = cost.get(`${f}:${line}`) || 0, tr = el("tr", c ? "ks-hot" : null);
          tr.append(el("td", "ks-cost", c ? fmtValue(m, c) : ""), el("td", "ks-cost", String(line)), el("td", null, text));
          table.append(tr);
        });
        table.append(el("tr")).append(el("td", null, "⋮"));
      }
      box.append(table);
    }
  }

  renderFindings() {
    const app = this.app, box = byId("ks-findings"), data = app.data;
    box.replaceChildren();
    if (data.findings_error) box.append(el("p", "ks-hint", "The advisor did not run: " + data.findings_error));
    if (!data.findings.length) { box.append(el("p", "ks-hint", "No findings.")); return; }
    for (const f of data.findings) {
      const div = el("div", "ks-finding " + f.severity);
      div.append(el("strong", null, `[${f.severity}] ${f.title}`), el("div", null, f.evidence));
      if (f.file) {
        const where = `${f.file}:${f.line || ""}`;
        const a = el("a", null, where + (f.module ? ` (${f.module})` : ""));
        a.href = "#"; a.addEventListener("click", (e) => { e.preventDefault(); this.showLine(f.file, f.line); });
        div.append(a);
      }
      if (f.estimated_saving_ms != null) div.append(el("div", "ks-hint", `estimated saving ${f.estimated_saving_ms.toFixed(2)} ms${data.header.per_step ? " per step" : ""}`));
      box.append(div);
    }
  }

  showLine(file, line) {
    const app = this.app, g = app.data.groups.line, k = g ? g.keys.indexOf(`${file}:${line}`) : -1;
    if (k >= 0) {
      const base = []; for (let i = 0; i < app.model.n; i++) if (g.node[i] === k) base.push(i);
      app.pick = [...new Set(base.map((b) => app.tree.map[b]))].filter((d) => d > 0);
      app.selection = app.pick;
    } else app.state.search = file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    app.state.tab = "flame"; app.syncControls(); app.refresh();
  }

  renderInfo() { byId("ks-meta").textContent = JSON.stringify(this.app.data.metadata, null, 2); }
}

function renderHeader(data) {
  const h = data.header;
  byId("ks-title").textContent = h.title;
  const facts = byId("ks-facts");
  const time = data.metrics.time_ns ? data.metrics.time_ns.reduce((a, b) => a + b, 0) : null;
  const items = [["command", h.command], ["source", h.source_path && `${h.source_format} ${h.source_path}`], ["started", h.start_time],
    ["host", h.host], ["devices", h.devices && h.devices.join(", ")], ["rank", h.world_size > 1 ? (h.rank != null ? `${h.rank} of ${h.world_size}` : `${h.world_size} ranks`) : null],
    ["total time", time !== null ? fmtValue("time_ns", time) : null],
    ["per step", time !== null && h.per_step ? `${fmtValue("time_ns", time * h.per_step.factor)} (${h.per_step.statement})` : null], ["wall time (timeline)", h.wall_time_ns != null ? fmtValue("time_ns", h.wall_time_ns) : null],
    ["time", h.time_meaning], ["recorded", h.coverage], ["ended", h.ended], ["by", h.tool]];
  for (const [k, v] of items) {
    if (v === null || v === undefined || v === "") continue;
    const d = el("div"); d.append(el("dt", null, k), el("dd", null, shortLabel(String(v)).slice(0, 400)));
    facts.append(d);
  }
}
