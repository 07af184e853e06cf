"use strict";
// cfbench run explorer. Every element is built with DOM calls; data strings only ever reach textContent.
(function () {
  const PAGE = 50;
  const app = document.getElementById("app");
  function el(tag, cls, text) {
    const x = document.createElement(tag);
    if (cls) x.className = cls;
    if (text !== undefined && text !== null) x.textContent = String(text);
    return x;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function fail(msg) { app.textContent = "cfbench view: " + msg; app.dataset.state = "error"; }

  async function unpack() {
    const box = JSON.parse(document.getElementById("cfbench-data").textContent);
    if (box.encoding !== "gzip+base64") throw new Error("unknown data encoding");
    const bin = atob(box.payload);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  function fmt(v) {
    if (v === null || v === undefined) return "-";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toPrecision(4).replace(/\.?0+$/, "");
    return String(v);
  }

  function start(D) {
    const S = D.strings, P = D.pairs;
    const str = (i) => (i === null || i === undefined || i < 0) ? null : S[i];
    app.textContent = "";
    const header = add(app, el("header"));
    add(header, el("strong", "", "cfbench view"));
    add(header, document.createTextNode(" "));
    add(header, el("span", "meta", D.title));
    const nav = add(header, el("nav"));
    const tabs = {};
    function tab(name, label) {
      const b = add(nav, el("button", "", label));
      b.dataset.tab = name;
      const s = add(app, el("section", "tab"));
      s.id = "tab-" + name;
      s.hidden = true;
      tabs[name] = [b, s];
      b.addEventListener("click", () => show(name));
      return s;
    }
    function show(name) {
      for (const [n, [b, s]] of Object.entries(tabs)) { s.hidden = n !== name; b.classList.toggle("on", n === name); }
      if (name === "tables") renderTables(); if (name === "figures") renderFigures();
    }
    const pairsTab = tab("pairs", "Pairs"), tablesTab = tab("tables", "Tables"),
          figTab = tab("figures", "Figures"), provTab = tab("provenance", "Provenance");

    // ------------------------------------------------------------------ pairs
    for (const n of D.notes || []) add(pairsTab, el("div", "note", n));
    let order = new Int32Array(0), pageNo = 0, selected = -1;
    const byId = new Map();
    const detail = el("div");
    detail.id = "detail";
    detail.hidden = true;
    if (!P || !P.n) {
      add(pairsTab, el("p", "meta", "No pairs in this results folder."));
    } else {
      for (let i = 0; i < P.n; i++) byId.set(P.ids[i], i);
      const controls = add(pairsTab, el("div", "controls"));
      const filters = [];
      function select(label, id, options) {
        const l = add(controls, el("label", "", label + " "));
        const s = add(l, el("select"));
        s.id = id;
        for (const [v, t] of options) { const o = add(s, el("option", "", t)); o.value = v; }
        s.addEventListener("change", () => { pageNo = 0; recompute(); });
        return s;
      }
      const searches = [];
      for (const f of P.facets) {
        if (f.values.length < 2) continue;
        if (f.values.length > 200) {  // too many for a list: a text box matching values that contain it
          const l = add(controls, el("label", "", f.name + " "));
          const inp = add(l, el("input"));
          inp.type = "search"; inp.id = "f-" + f.name; inp.placeholder = "contains...";
          inp.addEventListener("change", () => { pageNo = 0; recompute(); });
          searches.push([f, inp]);
          continue;
        }
        const opts = [["", "all"]].concat(f.values.map((v, k) => [String(k), v]));
        filters.push([f, select(f.name, "f-" + f.name, opts)]);
      }
      // a flag gets a filter only when it can match both ways; otherwise the page says how many pairs have it
      const flagSel = [];
      for (const f of P.flags) {
        const n1 = f.values.reduce((s, x) => s + x, 0);
        if (n1 > 0 && n1 < P.n) flagSel.push([f, select(f.label, "f-" + f.name, [["", "all"], ["1", f.yes + " (" + n1 + ")"], ["0", f.no + " (" + (P.n - n1) + ")"]])]);
        else add(pairsTab, el("div", "meta flag-note", f.label + ": " + (n1 ? "all " + P.n + " pairs" : "none of the " + P.n + " pairs") + " (no filter needed)"));
      }
      const sortOpts = [["", "order in the run"]];
      P.metrics.forEach((m, k) => { if (m.kind === "num") sortOpts.push([String(k), "|\u0394 " + m.name + "| largest first"]); });
      const sortSel = select("sort", "sort", sortOpts);
      const count = add(pairsTab, el("div", "meta"));
      count.id = "count";
      const pager = add(pairsTab, el("div", "pager"));
      const prev = add(pager, el("button", "", "\u2190 previous")), pageLabel = add(pager, el("span", "meta")),
            next = add(pager, el("button", "", "next \u2192"));
      prev.id = "prev"; next.id = "next"; pageLabel.id = "page";
      prev.addEventListener("click", () => { if (pageNo > 0) { pageNo--; renderList(); } });
      next.addEventListener("click", () => { if ((pageNo + 1) * PAGE < order.length) { pageNo++; renderList(); } });
      add(pairsTab, detail);
      const list = add(pairsTab, el("table", "list"));
      list.id = "pairs";
      const shownMetrics = P.metrics.filter(m => !/error$|^parsed$|^excluded$/.test(m.name)).slice(0, 4);

      function delta(m, i) {
        const a = m.a[i], b = m.b[i];
        return (a === null || b === null) ? null : b - a;
      }
      function recompute() {
        const fsel = filters.map(([f, s]) => [f.codes, s.value === "" ? -1 : Number(s.value)]).filter(x => x[1] >= 0);
        const gsel = flagSel.map(([f, s]) => [f.values, s.value === "" ? -1 : Number(s.value)]).filter(x => x[1] >= 0);
        const ssel = searches.filter(([f, inp]) => inp.value !== "").map(([f, inp]) => {
          const ok = new Uint8Array(f.values.length);
          f.values.forEach((v, k) => { ok[k] = v.includes(inp.value) ? 1 : 0; });
          return [f.codes, ok];
        });
        const keep = [];
        outer: for (let i = 0; i < P.n; i++) {
          for (const [codes, v] of fsel) if (codes[i] !== v) continue outer;
          for (const [codes, ok] of ssel) if (!ok[codes[i]]) continue outer;
          for (const [arr, v] of gsel) if (arr[i] !== v) continue outer;
          keep.push(i);
        }
        if (sortSel.value !== "") {
          const m = P.metrics[Number(sortSel.value)];
          const key = new Float64Array(P.n);
          for (const i of keep) { const d = delta(m, i); key[i] = d === null ? -1 : Math.abs(d); }
          keep.sort((x, y) => (key[y] - key[x]) || (x - y));
        }
        order = Int32Array.from(keep);
        renderList();
      }
      function renderList() {
        list.textContent = "";
        const head = add(list, el("tr"));
        add(head, el("th", "", "pair"));
        for (const f of P.facets) if (f.values.length > 1 && f.name !== "item") add(head, el("th", "", f.name));
        add(head, el("th", "", "compared"));
        for (const m of shownMetrics) add(head, el("th", "", m.name));
        if (sortSel.value !== "") add(head, el("th", "", "\u0394 " + P.metrics[Number(sortSel.value)].name));
        add(head, el("th", "", "flags"));
        const end = Math.min(order.length, (pageNo + 1) * PAGE);
        for (let r = pageNo * PAGE; r < end; r++) {
          const i = order[r];
          const tr = add(list, el("tr", "pair-row" + (i === selected ? " selected" : "")));
          tr.dataset.id = P.ids[i];
          tr.dataset.index = String(i);
          const a = add(add(tr, el("td")), el("a", "", P.ids[i]));
          a.href = "#pair=" + encodeURIComponent(P.ids[i]);
          for (const f of P.facets) if (f.values.length > 1 && f.name !== "item") add(tr, el("td", "", f.values[f.codes[i]]));
          add(tr, el("td", "", fmt(str(P.side_a[i])) + " \u2192 " + fmt(str(P.side_b[i]))));
          for (const m of shownMetrics) {
            const va = m.kind === "num" ? m.a[i] : str(m.a[i]), vb = m.kind === "num" ? m.b[i] : str(m.b[i]);
            add(tr, el("td", "", fmt(va) + " \u2192 " + fmt(vb)));
          }
          if (sortSel.value !== "") add(tr, el("td", "delta", fmt(delta(P.metrics[Number(sortSel.value)], i))));
          const fl = add(tr, el("td", "flags"));
          flagSpans(fl, i);
          const why = str(P.reasons[i]);
          if (why) add(fl, el("div", "meta why", why));
          tr.addEventListener("click", (ev) => { if (ev.target.tagName !== "A") location.hash = "pair=" + encodeURIComponent(P.ids[i]); });
        }
        count.textContent = order.length + " of " + P.n + " pairs shown";
        const pages = Math.max(1, Math.ceil(order.length / PAGE));
        pageLabel.textContent = "page " + (order.length ? pageNo + 1 : 0) + " of " + (order.length ? pages : 0);
        prev.disabled = pageNo === 0;
        next.disabled = (pageNo + 1) * PAGE >= order.length;
      }
      recompute();
    }

    function flagSpans(parent, i) {
      P.flags.forEach((f, k) => { if (f.values[i]) add(parent, el("span", "flag flag-" + k + (f.name === "flipped" ? " flip" : /fail|cut/.test(f.name) ? " fail" : ""), f.yes + " ")); });
    }
    function segments(parent, idxs, tag) {
      idxs.forEach((k, j) => {
        const t = str(k) || "";
        if (j % 2 === 0) { if (t) add(parent, document.createTextNode(t)); } else add(parent, el(tag, "", t));
      });
    }
    function showPair(i) {
      selected = i;
      detail.textContent = "";
      detail.hidden = false;
      detail.dataset.id = P.ids[i];
      add(detail, el("h3", "", P.ids[i]));
      const link = add(detail, el("a", "permalink", "link to this pair"));
      link.href = "#pair=" + encodeURIComponent(P.ids[i]);
      const facts = add(detail, el("div", "meta"));
      facts.textContent = P.facets.map(f => f.name + ": " + f.values[f.codes[i]]).join(" \u00b7 ");
      const fl = add(detail, el("div", "flags"));
      flagSpans(fl, i);
      const why = str(P.reasons[i]);
      if (why) add(detail, el("div", "reason", why));
      const mt = add(detail, el("table", "metrics"));
      const h = add(mt, el("tr"));
      for (const t of ["", fmt(str(P.side_a[i])), fmt(str(P.side_b[i])), "\u0394"]) add(h, el("th", "", t));
      for (const m of P.metrics) {
        const tr = add(mt, el("tr"));
        tr.dataset.metric = m.name;
        add(tr, el("th", "", m.name));
        if (m.kind === "num") {
          add(tr, el("td", "a", fmt(m.a[i]))); add(tr, el("td", "b", fmt(m.b[i])));
          const d = (m.a[i] === null || m.b[i] === null) ? null : m.b[i] - m.a[i];
          add(tr, el("td", "", fmt(d)));
        } else {
          const va = str(m.a[i]), vb = str(m.b[i]);
          add(tr, el("td", "a", fmt(va))); add(tr, el("td", "b", fmt(vb)));
          add(tr, el("td", "", va === vb ? "same" : "differs"));
        }
      }
      const grid = (label, cls) => {
        add(detail, el("h4", "", label));
        const g = add(detail, el("div", "two " + cls));
        return [add(g, el("div")), add(g, el("div"))];
      };
      if (!P.diff_blocks.length) add(detail, el("div", "meta", "no input text recorded for this pair (see the note above)"));
      P.diff_blocks.forEach((blk, k) => {
        const j = blk.index[i];
        if (j < 0) { add(detail, el("div", "meta", "no " + blk.label + " recorded for this pair (see the note above)")); return; }
        const d = P.diffs[j], cut = d.indexOf(-2);
        const [l, r] = grid(blk.label + " (word-level diff)", "diff diff-" + k);
        add(l, el("div", "meta", fmt(str(P.side_a[i])))); add(r, el("div", "meta", fmt(str(P.side_b[i]))));
        const pa = add(l, el("pre", "text diff-a")), pb = add(r, el("pre", "text diff-b"));
        segments(pa, d.slice(0, cut), "del");
        segments(pb, d.slice(cut + 1), "ins");
        if (k === 0 && !pa.querySelector("del") && !pb.querySelector("ins")) add(detail, el("div", "meta same-input", P.same_input_note || "the two inputs are identical"));
      });
      P.outputs.forEach((b, k) => {
        const [l, r] = grid(b.label, "block block-" + k);
        const ta = str(b.a[i]), tb = str(b.b[i]);
        add(l, el("pre", "text reply-a", ta === null ? "(none)" : ta));
        add(r, el("pre", "text reply-b", tb === null ? "(none)" : tb));
      });
      for (const tr of document.querySelectorAll("tr.pair-row")) tr.classList.toggle("selected", Number(tr.dataset.index) === i);
    }
    function follow() {
      const h = location.hash;
      if (!h.startsWith("#pair=")) return;
      let id;
      try { id = decodeURIComponent(h.slice(6)); } catch (e) { id = null; }
      const i = id === null ? undefined : byId.get(id);
      show("pairs");
      if (i === undefined) {
        detail.hidden = false; detail.textContent = ""; delete detail.dataset.id;
        add(detail, el("div", "note", "no pair with this id in this run: " + (id === null ? h : id)));
        return;
      }
      showPair(i);
      detail.scrollIntoView();
    }
    window.addEventListener("hashchange", follow);

    // ------------------------------------------------------------------ tables (rendered when opened)
    let tablesDone = false;
    function renderTables() {
      if (tablesDone) return;
      tablesDone = true;
      if (!D.tables.length) add(tablesTab, el("p", "meta", "No CSV tables in this folder."));
      for (const t of D.tables) {
        const det = add(tablesTab, el("details", "table"));
        det.dataset.name = t.name;
        add(det, el("summary", "", t.name + " (" + t.n_rows + " rows)"));
        det.addEventListener("toggle", () => {
          if (!det.open || det.dataset.done) return;
          det.dataset.done = "1";
          const tab = add(det, el("table", "data"));
          const hr = add(tab, el("tr"));
          for (const c of t.columns) add(hr, el("th", "", c));
          for (const row of t.rows) { const tr = add(tab, el("tr")); for (const c of row) add(tr, el("td", "", c)); }
          if (t.n_rows > t.rows.length) add(det, el("div", "meta", "first " + t.rows.length + " of " + t.n_rows + " rows shown; the CSV has them all"));
        });
      }
    }
    let figsDone = false;
    function renderFigures() {
      if (figsDone) return;
      figsDone = true;
      const figs = JSON.parse(document.getElementById("cfbench-figures").textContent);
      if (!figs.length) add(figTab, el("p", "meta", "No figures in this folder."));
      for (const f of figs) {
        const fig = add(figTab, el("figure"));
        if (/^[A-Za-z0-9+\/=]*$/.test(f.png)) {
          const img = add(fig, el("img", "fig"));
          img.alt = f.name;
          img.src = "data:image/png;base64," + f.png;
        }
        add(fig, el("figcaption", "meta", f.name));
      }
    }

    // ------------------------------------------------------------------ provenance
    const ri = D.run_info || {}, sm = D.summary || {};
    const kv = add(provTab, el("dl", "kv"));
    function fact(k, v) { add(kv, el("dt", "", k)); const dd = add(kv, el("dd", "", v)); dd.dataset.key = k; }
    const live = ri.replay === true ? "replay (every answer from the response cache)" : ri.replay === false ? "live (models called)" : "not recorded";
    fact("study", D.study);
    fact("config", ri.config || sm.config || "not recorded");
    const cm = ri.commit || sm.commit;  // run_info.json: {sha, dirty} (older runs: a string)
    fact("commit", !cm ? "not recorded in run_info.json" : typeof cm === "object"
      ? String(cm.sha || "?").slice(0, 12) + (cm.dirty ? " with uncommitted changes to tracked files" : " (clean)")
      : cm);
    fact("live or replay", live);
    fact("machine", [ri.machine, ri.cpus ? ri.cpus + " CPUs" : null, ri.python ? "Python " + ri.python : null].filter(Boolean).join(", ") || "not recorded");
    fact("wall time", ri.wall_s !== undefined ? ri.wall_s + " s (this execution)" : "not recorded");
    if (ri.live_run) fact("live run", JSON.stringify(ri.live_run, null, 2));
    fact("overrides", ri.overrides ? JSON.stringify(ri.overrides, null, 2) : "none recorded");
    if (sm.params) fact("parameters", JSON.stringify(sm.params, null, 2));
    add(provTab, el("h4", "", "files in the folder"));
    const ft = add(provTab, el("table", "data"));
    for (const f of D.files || []) { const tr = add(ft, el("tr")); add(tr, el("td", "", f.name)); add(tr, el("td", "", f.bytes + " bytes")); }
    for (const [name, obj] of [["run_info.json", ri], ["summary.json", sm]]) {
      const det = add(provTab, el("details"));
      add(det, el("summary", "", name));
      add(det, el("pre", "text", JSON.stringify(obj, null, 2)));
    }

    show("pairs");
    follow();
    app.dataset.state = "ready";
    app.dataset.pairs = String(P ? P.n : 0);
  }

  unpack().then(start).catch((e) => fail(String(e && e.message || e)));
})();
