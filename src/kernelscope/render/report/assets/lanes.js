// Timeline lanes: one lane per thread or stream, wheel to zoom, drag to select a range;
// the range lists the frames that ran in it and can be shown in the flame graph.

const LANE_H = 16;
const CAT_COLORS = { kernel: "#cf222e", memcpy: "#8250df", memset: "#bf3989", comm: "#d15704", runtime: "#1f6feb", op: "#b08800", sync: "#6e7781" };

class Lanes {
  constructor(app, tl) {
    this.app = app; this.tl = tl;
    this.built = false;
  }

  build() {
    if (this.built) return;
    this.built = true;
    const tl = this.tl, box = byId("ks-timeline");
    // threads first, then streams by device
    this.order = tl.tracks.map((t, i) => i).sort((a, b) => {
      const ta = tl.tracks[a], tb = tl.tracks[b];
      return (ta.kind === "thread" ? 0 : 1) - (tb.kind === "thread" ? 0 : 1) || ta.device.localeCompare(tb.device) || ta.name.localeCompare(tb.name);
    });
    this.lane = new Int32Array(tl.tracks.length);
    this.order.forEach((t, i) => { this.lane[t] = i; });
    let end = 0;
    for (let i = 0; i < tl.start.length; i++) end = Math.max(end, tl.start[i] + tl.dur[i]);
    this.end = Math.max(end, 1);
    this.view = [0, this.end];
    const row = el("div", "ks-lanes");
    const names = el("div", "ks-lane-names");
    for (const t of this.order) names.append(el("div", null, `${tl.tracks[t].device} ${tl.tracks[t].name}`));
    this.canvas = el("canvas");
    this.canvas.id = "ks-lanes-canvas";
    row.append(names, this.canvas);
    const note = tl.rows > tl.start.length ? `${tl.start.length} longest of ${tl.rows} intervals shown. ` : "";
    const flows = el("label"), box2 = el("input");
    box2.type = "checkbox"; box2.id = "ks-flows"; box2.checked = true;
    box2.addEventListener("change", () => this.draw());
    flows.append(box2, " launch → kernel lines");
    box.append(el("p", "ks-hint", note + "Wheel to zoom, drag to select a range, double-click to reset. "), flows, row);
    this.info = el("div"); this.info.id = "ks-range";
    box.append(this.info);
    this.analysis(box);
    let down = null;
    this.canvas.addEventListener("mousedown", (e) => { down = this.timeAt(e); });
    this.canvas.addEventListener("mouseup", (e) => {
      if (down === null) return;
      const up = this.timeAt(e);
      if (Math.abs(up - down) > (this.view[1] - this.view[0]) / 500) this.select(Math.min(up, down), Math.max(up, down));
      down = null;
    });
    this.canvas.addEventListener("dblclick", () => { this.view = [0, this.end]; this.range = null; this.draw(); });
    this.canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      const t = this.timeAt(e), k = e.deltaY > 0 ? 1.25 : 0.8;
      const v0 = Math.max(0, t - (t - this.view[0]) * k), v1 = Math.min(this.end, t + (this.view[1] - t) * k);
      if (v1 - v0 > 10) this.view = [v0, v1];
      this.draw();
    }, { passive: false });
  }

  timeAt(e) {
    const r = this.canvas.getBoundingClientRect();
    return this.view[0] + ((e.clientX - r.left) / r.width) * (this.view[1] - this.view[0]);
  }

  draw() {
    const tl = this.tl, c = this.canvas, dpr = window.devicePixelRatio || 1;
    const w = Math.max(200, byId("ks-timeline").clientWidth - 260), h = this.order.length * LANE_H;
    c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); c.style.width = w + "px"; c.style.height = h + "px";
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const [v0, v1] = this.view, scale = w / (v1 - v0), cats = tl.categories;
    for (let i = 0; i < tl.start.length; i++) {
      const s = tl.start[i], d = tl.dur[i];
      if (s + d < v0 || s > v1) continue;
      const x = (s - v0) * scale;
      ctx.fillStyle = CAT_COLORS[cats[tl.cat[i]]] || "#888";
      ctx.fillRect(x, this.lane[tl.track[i]] * LANE_H + 2, Math.max(d * scale, 0.5), LANE_H - 4);
    }
    if (byId("ks-flows").checked) this.drawFlows(ctx, scale);
    if (this.range) {
      ctx.fillStyle = "rgba(9,105,218,0.15)";
      ctx.fillRect((this.range[0] - v0) * scale, 0, (this.range[1] - this.range[0]) * scale, h);
    }
  }

  // A line from each runtime call to the device work it launched (same correlation), when both are in view.
  drawFlows(ctx, scale) {
    const tl = this.tl, [v0, v1] = this.view, cats = tl.categories, launch = new Map();
    for (let i = 0; i < tl.start.length; i++) {
      const c = cats[tl.cat[i]];
      if (tl.corr[i] >= 0 && (c === "runtime" || c === "sync") && tl.start[i] <= v1 && tl.start[i] >= v0) launch.set(tl.corr[i], i);
    }
    ctx.strokeStyle = "rgba(110,118,129,0.7)";
    ctx.beginPath();
    let drawn = 0;
    for (let i = 0; i < tl.start.length && drawn < 5000; i++) {
      const c = cats[tl.cat[i]];
      if (c === "runtime" || c === "sync" || c === "op") continue;
      const j = launch.get(tl.corr[i]);
      if (j === undefined || tl.start[i] > v1) continue;
      ctx.moveTo((tl.start[j] - v0) * scale, this.lane[tl.track[j]] * LANE_H + LANE_H - 2);
      ctx.lineTo((tl.start[i] - v0) * scale, this.lane[tl.track[i]] * LANE_H + 2);
      drawn++;
    }
    ctx.stroke();
    this.flowsDrawn = drawn;
  }

  // What ran in [a, b]: time overlapping the range, by frame.
  select(a, b) {
    this.range = [a, b];
    this.draw();
    const tl = this.tl, app = this.app, by = new Map();
    for (let i = 0; i < tl.start.length; i++) {
      const s = tl.start[i], e = s + tl.dur[i];
      if (e < a || s > b) continue;
      const node = tl.node[i];
      const row = by.get(node) || { node: node, ns: 0, cats: new Set() };
      row.ns += Math.min(e, b) - Math.max(s, a);
      row.cats.add(tl.categories[tl.cat[i]]);
      by.set(node, row);
    }
    const rows = [...by.values()].sort((x, y) => y.ns - x.ns);
    this.info.replaceChildren(el("p", null, `range ${fmtValue("time_ns", a)} – ${fmtValue("time_ns", b)}: ${rows.length} frames`));
    const show = el("button", null, "show in flame graph"); show.type = "button";
    show.addEventListener("click", () => {
      app.pick = [...new Set(rows.map((r) => app.tree.map[r.node]))].filter((d) => d > 0);
      app.selection = app.pick; app.state.tab = "flame"; app.refresh();
    });
    const table = el("table");
    const head = el("tr"); head.append(el("th", null, "frame"), el("th", null, "time in range"), el("th", null, "kind"));
    table.append(head);
    for (const r of rows.slice(0, 100)) {
      const tr = el("tr");
      tr.append(el("td", null, shortLabel(app.model.labels[app.data.frame[r.node]])), el("td", null, fmtValue("time_ns", r.ns)), el("td", null, [...r.cats].join(", ")));
      table.append(tr);
    }
    this.info.append(show, table);
  }

  analysis(box) {
    const tl = this.tl;
    if (tl.analysis_error) { box.append(el("p", "ks-hint", "Timeline analysis failed: " + tl.analysis_error)); return; }
    const a = tl.analysis;
    if (!a) return;
    box.append(el("h3", null, "GPU breakdown"));
    const devices = a.devices || [];
    if (devices.length) {
      const keys = Object.keys(devices[0]).filter((k) => typeof devices[0][k] !== "object");
      const table = el("table"), head = el("tr");
      for (const k of keys) head.append(el("th", null, k));
      table.append(head);
      for (const d of devices) { const tr = el("tr"); for (const k of keys) tr.append(el("td", null, String(d[k]))); table.append(tr); }
      box.append(table);
    } else box.append(el("p", "ks-hint", "No device activity in this timeline."));
    for (const [key, title] of [["idle_gaps", "Idle gaps"], ["syncs", "Host-device synchronisations"], ["launch", "Launch statistics"]]) {
      if (a[key] === undefined) continue;
      const d = el("details"); d.append(el("summary", null, title), el("pre", null, JSON.stringify(a[key], null, 2)));
      box.append(d);
    }
  }

  render() { this.build(); this.draw(); }
}
