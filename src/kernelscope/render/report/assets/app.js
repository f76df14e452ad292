// The page: loads the embedded data, derives the tree shown (kinds folded away), keeps the state
// (metric, mode, search, focus, grouping, tab) and the URL hash in step, and wires the views.

async function loadData() {
  const el = document.getElementById("ks-data");
  if (el.dataset.encoding === "gzip+base64") {
    const raw = atob(el.textContent.trim());
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  return JSON.parse(el.textContent);
}

const RATES = { "TFLOP/s": ["flops", 1e-3], "GB/s": ["bytes", 1] }; // per ns: flops/ns * 1e-3 = TFLOP/s; bytes/ns = GB/s

function fmtValue(metric, v) {
  if (!isFinite(v)) return "–";
  if (metric in RATES) return v.toFixed(v >= 100 ? 0 : 2);
  if (metric.endsWith("_ns")) { const ms = v / 1e6, a = Math.abs(ms); return ms.toFixed(a >= 1000 ? 0 : a >= 100 ? 1 : 3) + " ms"; }
  const a = Math.abs(v);
  const unit = metric.includes("bytes") ? "B" : metric === "flops" ? "FLOP" : "";
  if (a >= 1e12) return (v / 1e12).toFixed(2) + " T" + unit;
  if (a >= 1e9) return (v / 1e9).toFixed(2) + " G" + unit;
  if (a >= 1e6) return (v / 1e6).toFixed(2) + " M" + unit;
  if (a >= 1e4) return (v / 1e3).toFixed(1) + " k" + unit;
  return (Number.isInteger(v) ? String(v) : v.toFixed(2)) + (unit ? " " + unit : "");
}

// The base tree from the payload, and trees derived from it with some frame kinds folded away.
class Model {
  constructor(data) {
    this.data = data;
    this.kinds = data.frames.kinds;
    this.frameKind = data.frames.kind;
    this.labels = data.frames.label;
    this.n = data.parent.length;
    this.metricNames = Object.keys(data.metrics);
    // labels shared by several frames (one kernel on two streams) are one table row
    const ids = new Map();
    this.labelIds = Int32Array.from(this.labels, (l) => { let i = ids.get(l); if (i === undefined) ids.set(l, (i = ids.size)); return i; });
    this.labelNames = [...ids.keys()];
    this.base = {};
    for (const m of this.metricNames) this.base[m] = Float64Array.from(data.metrics[m]);
  }

  derive(visible) {
    const d = this.data, n = this.n, F = this.labels.length;
    if (this.kinds.every((k) => visible[k])) return this.tree(Int32Array.from(d.parent), Int32Array.from(d.frame), null, this.base);
    const map = new Int32Array(n);
    const parent = [-1], frame = [d.frame[0]];
    const index = new Map();
    for (let i = 1; i < n; i++) {
      const p = map[d.parent[i]], f = d.frame[i];
      if (!visible[this.kinds[this.frameKind[f]]]) { map[i] = p; continue; }
      const key = p * F + f;
      let node = index.get(key);
      if (node === undefined) { node = parent.length; index.set(key, node); parent.push(p); frame.push(f); }
      map[i] = node;
    }
    const size = parent.length;
    const ex = {};
    for (const m of this.metricNames) {
      const col = new Float64Array(size), src = this.base[m];
      for (let i = 0; i < n; i++) col[map[i]] += src[i];
      ex[m] = col;
    }
    return this.tree(Int32Array.from(parent), Int32Array.from(frame), map, ex);
  }

  // map: base node -> node of this tree (null: the identity)
  tree(parent, frame, map, ex) {
    const size = parent.length;
    const children = Array.from({ length: size }, () => []);
    for (let i = 1; i < size; i++) children[parent[i]].push(i);
    if (map === null) map = Int32Array.from({ length: size }, (_, i) => i);
    const model = this;
    return {
      n: size, parent: parent, frame: frame, map: map, ex: ex, children: children,
      incCache: {},
      label(node) { return model.labels[this.frame[node]]; },
      kind(node) { return model.kinds[model.frameKind[this.frame[node]]]; },
      incl(metric) {
        if (this.incCache[metric]) return this.incCache[metric];
        const inc = Float64Array.from(this.exOf(metric));
        for (let i = this.n - 1; i > 0; i--) inc[this.parent[i]] += inc[i];
        return (this.incCache[metric] = inc);
      },
      exOf(metric) {
        if (metric in RATES) return this.ex.time_ns || new Float64Array(this.n);
        return this.ex[metric] || new Float64Array(this.n);
      },
    };
  }
}

function widthMetric(metric) { return metric in RATES ? "time_ns" : metric; }

class App {
  constructor(data) {
    this.model = new Model(data);
    this.data = data;
    const names = this.model.metricNames;
    this.state = { tab: "flame", metric: names.includes("time_ns") ? "time_ns" : names[0] || "time_ns", mode: "inc",
      search: "", focusPath: "", group: "frame", sortCol: null, sortDir: -1 };
    this.visible = {};
    for (const k of this.model.kinds) this.visible[k] = true;
    this.pick = null; // derived nodes picked in the table or by a finding
    this.selection = null; // derived nodes the sandwich is about
    this.icicle = new Icicle(byId("ks-icicle-wrap"), byId("ks-icicle"), byId("ks-icicle-spacer"), byId("ks-tip"));
    this.icicle.onFocus = (node) => { this.setFocus(node); this.select([node], true); };
    this.views = new Views(this);
    this.lanes = data.timeline ? new Lanes(this, data.timeline) : null;
    this.ranks = data.ranks ? new RanksView(this, data.ranks) : null;
    this.readHash();
    this.buildControls();
    this.rederive();
    window.addEventListener("hashchange", () => { this.readHash(); this.syncControls(); this.rederive(); });
  }

  readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.get("tab")) this.state.tab = h.get("tab");
    if (h.get("metric")) this.state.metric = h.get("metric");
    if (h.get("mode")) this.state.mode = h.get("mode");
    if (h.has("q")) this.state.search = h.get("q");
    if (h.has("focus")) this.state.focusPath = h.get("focus");
    if (h.get("group")) this.state.group = h.get("group");
    if (h.has("hide")) for (const k of this.model.kinds) this.visible[k] = !h.get("hide").split(",").includes(k);
  }

  writeHash() {
    const s = this.state, h = new URLSearchParams();
    h.set("tab", s.tab); h.set("metric", s.metric); h.set("mode", s.mode); h.set("group", s.group);
    if (s.search) h.set("q", s.search);
    if (s.focusPath) h.set("focus", s.focusPath);
    const hidden = this.model.kinds.filter((k) => !this.visible[k]);
    if (hidden.length) h.set("hide", hidden.join(","));
    try {
      history.replaceState(null, "", "#" + h.toString());
    } catch (e) {
      // embedded as <iframe srcdoc> (a notebook's output): no URL of its own to keep the view in
    }
  }

  buildControls() {
    const metric = byId("ks-metric");
    const options = [...this.model.metricNames];
    if (options.includes("time_ns") && options.includes("flops")) options.push("TFLOP/s");
    if (options.includes("time_ns") && options.includes("bytes")) options.push("GB/s");
    for (const m of options) metric.append(new Option(m, m));
    // a hand-edited or stale URL hash falls back to what this profile has
    if (!options.includes(this.state.metric)) this.state.metric = options[0] || "time_ns";
    if (this.state.group !== "frame" && !(this.state.group in this.data.groups)) this.state.group = "frame";
    if (!["flame", "bottomup", "sandwich", "timeline", "ranks", "source", "findings", "info"].includes(this.state.tab) || (this.state.tab === "timeline" && !this.lanes) || (this.state.tab === "ranks" && !this.ranks)) this.state.tab = "flame";
    if (this.state.mode !== "self") this.state.mode = "inc";
    metric.addEventListener("change", () => { this.state.metric = metric.value; this.state.sortCol = null; this.refresh(); });
    byId("ks-mode").addEventListener("change", (e) => { this.state.mode = e.target.value; this.refresh(); });
    const search = byId("ks-search");
    search.addEventListener("input", () => { this.state.search = search.value; this.pick = null; this.refresh(); });
    const kinds = byId("ks-kinds");
    for (const k of this.model.kinds) {
      if (k === "root") continue;
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox"; box.dataset.kind = k;
      box.addEventListener("change", () => { this.visible[k] = box.checked; this.rederive(); });
      label.append(box, " " + k);
      label.style.color = kindColor(k, true);
      kinds.append(label);
    }
    const preset = (fn) => () => { for (const k of this.model.kinds) this.visible[k] = k === "root" || fn(k); this.syncControls(); this.rederive(); };
    byId("ks-fold-modules").addEventListener("click", preset((k) => ["module", "scope", "region", "backward"].includes(k)));
    byId("ks-hide-framework").addEventListener("click", preset((k) => !["op", "kernel", "part", "native"].includes(k)));
    byId("ks-show-all").addEventListener("click", preset(() => true));
    const group = byId("ks-group");
    group.append(new Option("frame (self / inclusive)", "frame"));
    for (const by of Object.keys(this.data.groups)) group.append(new Option(by, by));
    group.addEventListener("change", () => { this.state.group = group.value; this.state.sortCol = null; this.refresh(); });
    const tabs = byId("ks-tabs");
    for (const [id, name] of [["flame", "Flame graph"], ["bottomup", "Bottom-up"], ["sandwich", "Sandwich"], ["timeline", "Timeline"], ["ranks", "Ranks"], ["source", "Source"], ["findings", "Findings"], ["info", "Run info"]]) {
      if ((id === "timeline" && !this.lanes) || (id === "ranks" && !this.ranks)) continue;
      const b = document.createElement("button");
      b.type = "button"; b.textContent = name; b.dataset.tab = id; b.setAttribute("role", "tab");
      b.addEventListener("click", () => { this.state.tab = id; this.refresh(); });
      tabs.append(b);
    }
    this.syncControls();
  }

  syncControls() {
    byId("ks-metric").value = this.state.metric;
    byId("ks-mode").value = this.state.mode;
    byId("ks-search").value = this.state.search;
    byId("ks-group").value = this.state.group;
    for (const box of document.querySelectorAll("#ks-kinds input")) box.checked = this.visible[box.dataset.kind];
  }

  rederive() {
    this.tree = this.model.derive(this.visible);
    this.tree.sortedFor = null;
    this.focus = this.resolvePath(this.state.focusPath);
    this.selection = null;
    this.pick = null;
    this.refresh();
  }

  sortChildren() {
    const m = widthMetric(this.state.metric);
    if (this.tree.sortedFor === m) return;
    const inc = this.tree.incl(m);
    for (const kids of this.tree.children) if (kids.length > 1) kids.sort((a, b) => inc[b] - inc[a]);
    this.tree.sortedFor = m;
  }

  // The focus is kept as the path of frame ids from the root, so it survives folding.
  pathOf(node) {
    const ids = [];
    for (let a = node; a > 0; a = this.tree.parent[a]) ids.push(this.tree.frame[a]);
    return ids.reverse().join(".");
  }

  resolvePath(path) {
    let node = 0;
    if (!path) return 0;
    for (const part of path.split(".")) {
      const f = Number(part);
      const next = this.tree.children[node].find((c) => this.tree.frame[c] === f);
      if (next === undefined) continue; // a folded-away frame: skip it
      node = next;
    }
    return node;
  }

  setFocus(node) { this.focus = node; this.state.focusPath = this.pathOf(node); this.refresh(); }

  select(nodes, fromIcicle) {
    this.selection = nodes;
    if (fromIcicle) this.views.selectRowOf(nodes[0]);
    this.views.renderSandwich();
  }

  searchMatches() {
    const q = this.state.search, input = byId("ks-search");
    input.classList.remove("ks-bad");
    if (!q) return null;
    let re;
    try { re = new RegExp(q, "i"); } catch (e) { input.classList.add("ks-bad"); return null; }
    const t = this.tree, byFrame = new Map(), hl = new Uint8Array(t.n);
    for (let i = 1; i < t.n; i++) {
      const f = t.frame[i];
      let hit = byFrame.get(f);
      if (hit === undefined) { hit = re.test(this.model.labels[f]); byFrame.set(f, hit); }
      if (hit) hl[i] = 1;
    }
    return hl;
  }

  highlight() {
    const t = this.tree;
    if (this.pick) {
      const hl = new Uint8Array(t.n);
      for (const d of this.pick) hl[d] = 1;
      return hl;
    }
    return this.searchMatches();
  }

  // Share of the total under highlighted nodes, each subtree counted once.
  share(hl) {
    const t = this.tree, inc = t.incl(widthMetric(this.state.metric));
    const covered = new Uint8Array(t.n);
    let sum = 0, count = 0;
    for (let i = 1; i < t.n; i++) {
      const p = t.parent[i];
      if (covered[p]) { covered[i] = 1; continue; }
      if (hl[i]) { covered[i] = 1; sum += inc[i]; count++; }
    }
    return [count, inc[0] > 0 ? sum / inc[0] : 0];
  }

  refresh() {
    this.sortChildren();
    const hl = this.highlight();
    const info = byId("ks-search-info");
    if (hl) {
      const [count, frac] = this.share(hl);
      const what = this.pick ? "selected" : "matching";
      info.textContent = `${count} ${what} frames, ${(100 * frac).toFixed(1)}% of ${widthMetric(this.state.metric)}`;
    } else info.textContent = "";
    for (const b of document.querySelectorAll("#ks-tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === this.state.tab));
    for (const s of document.querySelectorAll(".ks-view")) s.hidden = s.id !== "view-" + this.state.tab;
    const t = this.tree, m = widthMetric(this.state.metric), inc = t.incl(m), ex = t.exOf(m);
    t.fmt = (node) => `${t.kind(node)} · ${m} inclusive ${fmtValue(m, inc[node])} (${inc[0] > 0 ? (100 * inc[node] / inc[0]).toFixed(1) : "0"}%) · self ${fmtValue(m, ex[node])}`;
    t.inc = inc;
    this.views.renderCrumbs();
    if (this.state.tab === "flame") { this.icicle.set(t, this.focus, hl); this.views.renderTable(); }
    else if (this.state.tab === "bottomup") this.views.renderBottomUp();
    else if (this.state.tab === "sandwich") this.views.renderSandwich();
    else if (this.state.tab === "source") this.views.renderSource();
    else if (this.state.tab === "timeline" && this.lanes) this.lanes.render();
    else if (this.state.tab === "ranks" && this.ranks) this.ranks.render();
    else if (this.state.tab === "findings") this.views.renderFindings();
    else if (this.state.tab === "info") this.views.renderInfo();
    this.writeHash();
  }
}

function byId(id) { return document.getElementById(id); }

function showError(msg) { const e = byId("ks-error"); e.hidden = false; e.textContent = "report error: " + msg; }

loadData()
  .then((data) => { window.ksApp = new App(data); renderHeader(data); window.ksReadyMs = performance.now(); document.body.dataset.ready = "1"; })
  .catch((err) => { showError(String(err && err.stack || err)); throw err; });
