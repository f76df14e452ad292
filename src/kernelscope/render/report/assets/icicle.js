"use strict";
// The icicle: a hand-written canvas renderer (measured fastest for 100k nodes).
// Only the rows in view are drawn; frames narrower than half a pixel are skipped with their subtree.

const KIND_COLORS = {
  root: ["#9aa4ae", "#5b636b"], scope: ["#b392f0", "#6f42c1"], python: ["#79b8ff", "#1f6feb"],
  module: ["#85e89d", "#2ea043"], region: ["#56d4dd", "#1b7c83"], backward: ["#ffab70", "#d15704"],
  op: ["#ffdf5d", "#b08800"], kernel: ["#f97583", "#cf222e"], part: ["#f692ce", "#bf3989"],
  native: ["#d1d5da", "#6a737d"],
};
const ROW_H = 18;

function kindColor(kind, dark) {
  const pair = KIND_COLORS[kind] || KIND_COLORS.root;
  return dark ? pair[1] : pair[0];
}

class Icicle {
  constructor(wrap, canvas, spacer, tip) {
    this.wrap = wrap; this.canvas = canvas; this.spacer = spacer; this.tip = tip;
    this.rows = []; this.tree = null; this.focus = 0; this.highlight = null; this.onFocus = null; this.onSelect = null;
    this.dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    wrap.addEventListener("scroll", () => this.draw());
    canvas.addEventListener("mousemove", (e) => this.hover(e));
    canvas.addEventListener("mouseleave", () => { this.tip.hidden = true; });
    canvas.addEventListener("click", (e) => {
      const hit = this.hit(e);
      if (hit && this.onFocus) this.onFocus(hit.node);
    });
    window.addEventListener("resize", () => { this.layout(); this.draw(); });
  }

  // tree: {n, parent, frame, children, inc (Float64Array), label(node), kind(node), fmt(node)}
  set(tree, focus, highlight) {
    this.tree = tree; this.focus = focus; this.highlight = highlight;
    this.layout(); this.draw();
  }

  layout() {
    const t = this.tree; if (!t) return;
    const width = Math.max(100, this.wrap.clientWidth - 16);
    this.width = width;
    const rows = [];
    const chain = [];
    for (let a = this.focus; a >= 0; a = t.parent[a]) chain.push(a);
    chain.reverse();
    chain.forEach((node, d) => { if (node !== this.focus) rows[d] = [{ node: node, x: 0, w: width, above: true }]; });
    const base = chain.length - 1;
    const total = t.inc[this.focus];
    if (total > 0) {
      const stack = [[this.focus, 0, width, base]];
      while (stack.length) {
        const [node, x0, w0, d] = stack.pop();
        // depth-first, left to right: every row's rectangles come out sorted by x
        (rows[d] || (rows[d] = [])).push({ node: node, x: x0, w: w0, above: false });
        const kids = t.children[node];
        const scale = w0 / t.inc[node];
        let end = 0, x = x0;
        const starts = [];
        for (; end < kids.length; end++) {
          const w = t.inc[kids[end]] * scale;
          if (!(w >= 0.5)) break; // children are sorted by value, the rest are narrower
          starts.push(x); x += w;
        }
        for (let i = end - 1; i >= 0; i--) stack.push([kids[i], starts[i], t.inc[kids[i]] * scale, d + 1]);
      }
    } else rows[base] = [{ node: this.focus, x: 0, w: width, above: false }];
    this.rows = rows;
    this.spacer.style.height = rows.length * ROW_H + "px";
  }

  draw() {
    const t = this.tree; if (!t) return;
    const dpr = window.devicePixelRatio || 1;
    const w = this.width, h = Math.min(this.wrap.clientHeight, this.rows.length * ROW_H + 2);
    const c = this.canvas;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
      c.style.width = w + "px"; c.style.height = h + "px";
    }
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const top = this.wrap.scrollTop;
    const first = Math.floor(top / ROW_H), last = Math.min(this.rows.length - 1, Math.ceil((top + h) / ROW_H));
    const hl = this.highlight;
    for (let d = first; d <= last; d++) {
      const row = this.rows[d]; if (!row) continue;
      const y = d * ROW_H - top;
      for (const r of row) {
        const faded = r.above || (hl && !hl[r.node]);
        ctx.globalAlpha = faded ? 0.35 : 1;
        ctx.fillStyle = kindColor(t.kind(r.node), this.dark);
        ctx.fillRect(r.x, y, Math.max(r.w - 0.5, 0.5), ROW_H - 1);
        if (hl && hl[r.node]) { ctx.globalAlpha = 1; ctx.strokeStyle = this.dark ? "#fff" : "#000"; ctx.strokeRect(r.x + 0.5, y + 0.5, Math.max(r.w - 1.5, 0.5), ROW_H - 2); }
        if (r.w > 28) {
          ctx.globalAlpha = faded ? 0.6 : 1;
          ctx.fillStyle = this.dark ? "#fff" : "#111";
          const max = Math.floor((r.w - 6) / 6.5);
          const label = t.label(r.node);
          ctx.fillText(label.length > max ? label.slice(0, Math.max(max - 1, 1)) + "…" : label, r.x + 3, y + ROW_H / 2);
        }
      }
    }
    ctx.globalAlpha = 1;
  }

  hit(e) {
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left, y = e.clientY - rect.top + this.wrap.scrollTop;
    const row = this.rows[Math.floor(y / ROW_H)];
    if (!row) return null;
    let lo = 0, hi = row.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1, r = row[mid];
      if (x < r.x) hi = mid - 1; else if (x >= r.x + r.w) lo = mid + 1; else return r;
    }
    return null;
  }

  hover(e) {
    const hit = this.hit(e);
    if (!hit) { this.tip.hidden = true; this.canvas.style.cursor = "default"; return; }
    this.canvas.style.cursor = "pointer";
    this.tip.hidden = false;
    this.tip.textContent = shortLabel(this.tree.label(hit.node)) + "\n" + this.tree.fmt(hit.node);
    this.tip.style.whiteSpace = "pre-wrap";
    this.tip.style.left = Math.min(e.clientX + 12, window.innerWidth - 320) + "px";
    this.tip.style.top = e.clientY + 14 + "px";
  }
}
