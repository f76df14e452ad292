// The Ranks view of a whole job: a heatmap of rank × top lines/modules, the straggler, the most
// skewed collectives, communication per rank and the rank-to-rank spread. Nothing is computed here
// beyond colours: the numbers are those of `kernelscope ranks --json` (data.ranks).

function nsText(v) { return fmtValue("time_ns", v); }

function shortKey(key) {
  if (key === null || key === undefined) return "?";
  const slash = key.lastIndexOf("/");
  return slash >= 0 && slash < key.length - 1 ? key.slice(slash + 1) : key;
}

// cell colour: how far the rank is from the column's median rank, red above, blue below (±50% is full)
function heatColor(v, med) {
  if (!(med > 0)) return v > 0 ? "rgba(209,36,47,0.55)" : "transparent";
  const d = Math.max(-1, Math.min(1, (v - med) / med / 0.5));
  return d >= 0 ? `rgba(209,36,47,${(0.6 * d).toFixed(3)})` : `rgba(9,105,218,${(-0.6 * d).toFixed(3)})`;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b), n = s.length;
  if (!n) return 0;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

function simpleTable(headers, rows) {
  const table = el("table", "ks-rank-table"), head = el("tr");
  for (const h of headers) head.append(el("th", null, h));
  table.append(el("thead"));
  table.tHead.append(head);
  const body = el("tbody");
  for (const r of rows) {
    const tr = el("tr");
    for (const c of r) {
      const td = el("td", null, String(c === null || c === undefined ? "" : c));
      td.title = td.textContent;
      tr.append(td);
    }
    body.append(tr);
  }
  table.append(body);
  return table;
}

class RanksView {
  constructor(app, data) {
    this.app = app;
    this.data = data;
    const bys = Object.keys(data.heatmap || {});
    this.by = bys.includes("line") ? "line" : bys[0] || null;
  }

  render() {
    const box = byId("ks-ranks"), d = this.data, s = d.straggler;
    box.replaceChildren();
    const how = d.matched_by_seq ? "NCCL seq_num" : "their order within each process group (or stream)";
    box.append(el("p", null, `${d.ranks.length} ranks; ${d.collectives} collectives matched across ranks by ${how}.`));
    for (const reason of d.skipped) box.append(el("p", "ks-hint", "skipped: " + reason));
    const summary = el("div", "ks-straggler-summary");
    summary.id = "ks-straggler";
    if (s) {
      summary.append(el("strong", null, `straggler: rank ${s.rank}`),
        el("span", null, ` arrived last at ${s.last_arrivals} of ${s.collectives} collectives; its kernel time is ${nsText(s.extra_ns)} above the median rank's.`));
      summary.dataset.rank = String(s.rank);
    } else summary.append(el("span", "ks-hint", "No straggler: no rank arrived last at a collective with any skew."));
    box.append(summary);
    this.renderHeatmap(box);
    if (s && s.excess.length) {
      box.append(el("h3", null, "where the straggler's extra time goes (vs the median rank)"));
      box.append(simpleTable(["line / module", "rank " + s.rank, "median rank", "extra"],
        s.excess.map((e) => [`${e.by} ${e.key || "?"}`, nsText(e.rank_ns), nsText(e.median_ns), nsText(e.extra_ns)])));
    }
    if (d.top_skew.length) {
      box.append(el("h3", null, "collectives with the largest skew (last arrival − first arrival)"));
      const t = simpleTable(["collective", "group", "#", "skew", "first", "last", "line on the last rank"],
        d.top_skew.map((c) => [c.name, c.group, (c.by_seq ? "seq " : "") + c.seq, nsText(c.skew_ns), "rank " + c.first_rank, "rank " + c.last_rank, c.line || ""]));
      t.id = "ks-skew";
      box.append(t);
    }
    if (d.comm.length) {
      box.append(el("h3", null, "communication per rank (most exposed first)"));
      const rows = [...d.comm].sort((a, b) => b.exposed_comm_ns - a.exposed_comm_ns).slice(0, 50);
      box.append(simpleTable(["rank", "span", "computation", "communication", "exposed", "exposed %"],
        rows.map((r) => ["rank " + r.rank, nsText(r.total_ns), nsText(r.computation_ns), nsText(r.total_comm_ns), nsText(r.exposed_comm_ns),
          r.total_ns ? (100 * r.exposed_comm_ns / r.total_ns).toFixed(1) + "%" : ""])));
    }
    if (d.spread.length) {
      box.append(el("h3", null, "rank-to-rank spread of time per line / module"));
      box.append(simpleTable(["line / module", "min", "median", "max", "max on"],
        d.spread.map((sp) => [`${sp.by} ${sp.key || "?"}`, nsText(sp.min_ns), nsText(sp.median_ns), nsText(sp.max_ns), "rank " + sp.max_rank])));
    }
  }

  renderHeatmap(box) {
    const hm = this.data.heatmap || {}, bys = Object.keys(hm);
    if (!this.by) return;
    const head = el("h3", null, "time per rank: top ");
    const pick = el("select");
    pick.id = "ks-heat-by";
    for (const by of bys) pick.append(new Option(by === "line" ? "lines" : by === "module" ? "modules" : by, by));
    pick.value = this.by;
    pick.addEventListener("change", () => { this.by = pick.value; this.render(); });
    head.append(pick);
    box.append(head, el("p", "ks-hint", "Each cell is the rank's kernel time at that line or module; colour: above (red) or below (blue) the median rank's, full at ±50%. The straggler's row is marked."));
    const { keys, ranks, rows } = hm[this.by];
    const meds = keys.map((_, j) => median(rows.map((r) => r[j])));
    const straggler = this.data.straggler ? this.data.straggler.rank : null;
    const table = el("table", "ks-heat");
    table.id = "ks-heatmap";
    table.dataset.by = this.by;
    const tr = el("tr");
    tr.append(el("th", null, "rank"));
    for (const k of keys) { const th = el("th", null, shortKey(k)); th.title = k; tr.append(th); }
    table.append(el("thead"));
    table.tHead.append(tr);
    const body = el("tbody");
    ranks.forEach((rank, i) => {
      const row = el("tr");
      row.dataset.rank = String(rank);
      const name = el("td", null, rank === straggler ? `rank ${rank} ◀ straggler` : `rank ${rank}`);
      if (rank === straggler) row.classList.add("ks-straggler");
      row.append(name);
      rows[i].forEach((v, j) => {
        const td = el("td", "ks-heat-cell", nsText(v));
        td.dataset.key = keys[j];
        td.style.background = heatColor(v, meds[j]);
        td.title = `rank ${rank} · ${keys[j]}: ${nsText(v)} (median rank ${nsText(meds[j])})`;
        row.append(td);
      });
      body.append(row);
    });
    table.append(body);
    const wrap = el("div", "ks-heat-wrap");
    wrap.append(table);
    box.append(wrap);
  }
}
