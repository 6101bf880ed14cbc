/* verimod HTML report: the per-item browser.
 *
 * Contract: the item data are read once from the JSON block #report-data (written by
 * verimod.report.html); every string taken from it reaches the page only through
 * textContent, createTextNode, Option text or dataset values -- never innerHTML, never a URL,
 * never an event-handler attribute. Only one page of items exists in the DOM at a time; an
 * item's details are built when it is opened. Class names come from the constants below,
 * never from the data.
 */
(function () {
  "use strict";

  var FIELDS = ["target", "target_type", "target_explicitness", "stance", "label", "category"];
  var FIELD_LABELS = ["target", "target type", "explicitness", "stance", "label", "category"];
  var STATUS_LABELS = { ok: "parsed (ok)" };
  var NOT_ANNOTATED = "(not annotated)";

  function $(id) {
    return document.getElementById(id);
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function fail(message) {
    var box = $("browser-error");
    box.textContent = message;
    box.hidden = false;
  }

  var data;
  try {
    data = JSON.parse($("report-data").textContent);
  } catch (error) {
    fail("The item data of this report cannot be read: " + error);
    return;
  }
  if (!data || !Array.isArray(data.runs) || data.runs.length === 0 || String(data.fields) !== String(FIELDS)) {
    fail("The item data of this report have an unexpected shape.");
    return;
  }

  var ui = {
    run: $("run-select"),
    j: $("filter-j"),
    field: $("filter-field"),
    category: $("filter-category"),
    tag: $("filter-tag"),
    status: $("filter-status"),
    search: $("filter-search"),
    reset: $("filter-reset"),
    first: $("page-first"),
    prev: $("page-prev"),
    next: $("page-next"),
    last: $("page-last"),
    pageInput: $("page-input"),
    pageSize: $("page-size"),
    expand: $("expand-page"),
    info: $("page-info"),
    count: $("match-count"),
    list: $("item-list")
  };

  var state = { run: 0, page: 0, filtered: [], open: new Set(), choices: null, haystacks: [] };

  function pageSize() {
    var size = parseInt(ui.pageSize.value, 10);
    return size > 0 ? size : 50;
  }

  function addOption(select, value, text) {
    select.appendChild(new Option(text, value));
  }

  function resetSelect(select) {
    while (select.options.length > 1) select.remove(1);
    select.value = "";
  }

  function sortedKeys(counts) {
    return Array.from(counts.keys()).sort(function (a, b) {
      return a < b ? -1 : a > b ? 1 : 0;
    });
  }

  function bump(counts, key) {
    counts.set(key, (counts.get(key) || 0) + 1);
  }

  /* The choices of the category, tag and status filters of one run, with their counts. */
  function choicesOf(run) {
    var categories = new Map();
    var tags = new Map();
    var statuses = new Map();
    var unannotated = 0;
    run.items.forEach(function (item) {
      if (item.r[5] === null) unannotated += 1;
      else bump(categories, item.r[5]);
      item.g.forEach(function (tag) {
        bump(tags, tag);
      });
      bump(statuses, item.e === null ? "ok" : item.e);
    });
    return {
      categories: sortedKeys(categories),
      categoryCounts: categories,
      unannotated: unannotated,
      tags: sortedKeys(tags),
      tagCounts: tags,
      statuses: sortedKeys(statuses),
      statusCounts: statuses
    };
  }

  function fillFilters() {
    var run = data.runs[state.run];
    var choices = choicesOf(run);
    state.choices = choices;
    resetSelect(ui.field);
    FIELDS.forEach(function (field, k) {
      addOption(ui.field, String(k), FIELD_LABELS[k]);
    });
    resetSelect(ui.category);
    choices.categories.forEach(function (category, k) {
      addOption(ui.category, "v" + k, category + " (" + choices.categoryCounts.get(category) + ")");
    });
    if (choices.unannotated) addOption(ui.category, "none", NOT_ANNOTATED + " (" + choices.unannotated + ")");
    resetSelect(ui.tag);
    choices.tags.forEach(function (tag, k) {
      addOption(ui.tag, "v" + k, tag + " (" + choices.tagCounts.get(tag) + ")");
    });
    resetSelect(ui.status);
    choices.statuses.forEach(function (status, k) {
      addOption(ui.status, "v" + k, (STATUS_LABELS[status] || status) + " (" + choices.statusCounts.get(status) + ")");
    });
    ui.j.value = "";
    ui.search.value = "";
  }

  function chosen(select, values) {
    var value = select.value;
    if (value === "" || value.charAt(0) !== "v") return undefined;
    return values[parseInt(value.slice(1), 10)];
  }

  /* Lower-cased search text of every item of a run, built on the first search. */
  function haystacks(runIndex) {
    if (!state.haystacks[runIndex]) {
      state.haystacks[runIndex] = data.runs[runIndex].items.map(function (item) {
        return [item.id, item.x, item.o || "", item.r[0] || "", item.g.join("\n"), item.d || "", (item.ctx || []).join("\n")]
          .join("\n")
          .toLowerCase();
      });
    }
    return state.haystacks[runIndex];
  }

  function applyFilters() {
    var run = data.runs[state.run];
    var choices = state.choices;
    var j = ui.j.value;
    var field = ui.field.value === "" ? -1 : parseInt(ui.field.value, 10);
    var categoryNone = ui.category.value === "none";
    var category = chosen(ui.category, choices.categories);
    var tag = chosen(ui.tag, choices.tags);
    var status = chosen(ui.status, choices.statuses);
    var query = ui.search.value.trim().toLowerCase();
    var hay = query ? haystacks(state.run) : null;
    var out = [];
    for (var i = 0; i < run.items.length; i++) {
      var item = run.items[i];
      if (j !== "" && String(item.j) !== j) continue;
      if (field >= 0 && item.c[field] !== false) continue;
      if (categoryNone && item.r[5] !== null) continue;
      if (category !== undefined && item.r[5] !== category) continue;
      if (tag !== undefined && item.g.indexOf(tag) < 0) continue;
      if (status !== undefined && (item.e === null ? "ok" : item.e) !== status) continue;
      if (hay !== null && hay[i].indexOf(query) < 0) continue;
      out.push(i);
    }
    state.filtered = out;
    state.page = 0;
    render();
  }

  function formatScore(value) {
    return value === null ? "n/a" : value.toFixed(3);
  }

  function verdictOf(item, k) {
    if (item.c[k] === true) return "ok";
    if (item.c[k] === false) return "bad";
    return "none";
  }

  function verdictMark(kind, field) {
    var symbols = { ok: "✓", bad: "✗", none: "–" };
    var words = { ok: "matches the reference", bad: "mismatches the reference", none: "not annotated in the reference" };
    var mark = el("span", "verdict verdict-" + kind, symbols[kind]);
    mark.title = field + " " + words[kind];
    mark.setAttribute("aria-label", field + " " + words[kind]);
    return mark;
  }

  function badge(text, kind) {
    return el("span", "badge" + (kind ? " badge-" + kind : ""), text);
  }

  function preview(text) {
    var cut = text.length > 140 ? text.slice(0, 140) : text;
    var last = cut.charCodeAt(cut.length - 1);
    if (cut.length < text.length && last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
    return cut.replace(/\s+/g, " ") + (cut.length < text.length ? "…" : "");
  }

  function itemHead(item, expanded) {
    var head = el("button", "item-head");
    head.type = "button";
    head.setAttribute("aria-expanded", expanded ? "true" : "false");
    head.appendChild(el("span", "item-id data", item.id));
    head.appendChild(badge(item.j ? "J = 1" : "J = 0", item.j ? "ok" : "bad"));
    head.appendChild(badge(item.e === null ? "parsed" : item.e, item.e === null ? "" : "bad"));
    if (item.t !== null) head.appendChild(badge("T-F1 " + formatScore(item.t)));
    var failing = [];
    FIELDS.forEach(function (field, k) {
      if (item.c[k] === false && item.v !== null) failing.push(FIELD_LABELS[k]);
    });
    if (failing.length) head.appendChild(el("span", "failing", "✗ " + failing.join(", ")));
    head.appendChild(el("span", "item-preview data", preview(item.x)));
    return head;
  }

  function metaEntry(list, name, value, className) {
    var row = el("div");
    row.appendChild(el("dt", "", name));
    row.appendChild(el("dd", className || "", value));
    list.appendChild(row);
  }

  function metaList(item) {
    var list = el("dl", "meta wide");
    metaEntry(list, "status", item.s);
    if (item.e !== null) metaEntry(list, "error class", item.e);
    if (item.d !== null) metaEntry(list, "detail", item.d, "data");
    metaEntry(list, "J", String(item.j));
    metaEntry(list, "T-F1", formatScore(item.t));
    metaEntry(list, "format", item.f ? "ok" : "not ok");
    if (item.vi.length) metaEntry(list, "codebook violations", item.vi.join(", "));
    if (item.fl.length) metaEntry(list, "lenient forms", item.fl.join(", "));
    if (item.g.length) metaEntry(list, "tags", item.g.join(" · "), "data");
    return list;
  }

  function block(title, body, wide) {
    var box = el("div", wide ? "wide" : "");
    box.appendChild(el("h4", "", title));
    box.appendChild(body);
    return box;
  }

  /* The raw output with the parser's anchor spans (UTF-16 offsets) wrapped in <mark>s. */
  function rationale(item) {
    var box = el("div", "rationale data");
    if (item.o === null) {
      box.appendChild(el("span", "no-output", "(no output)"));
      return box;
    }
    var text = item.o;
    var anchors = item.a.slice().sort(function (p, q) {
      return p[1] - q[1];
    });
    var cursor = 0;
    anchors.forEach(function (anchor) {
      var k = anchor[0];
      var start = anchor[1];
      var end = anchor[2];
      if (!(k >= 0 && k < FIELDS.length) || start < cursor || end > text.length || end <= start) return;
      if (start > cursor) box.appendChild(document.createTextNode(text.slice(cursor, start)));
      var field = FIELDS[k];
      var mark = el("mark", "anchor anchor-" + field, text.slice(start, end));
      mark.dataset.field = field;
      var title = FIELD_LABELS[k];
      if (anchor[3] === null) {
        mark.classList.add("anchor-invalid");
        title += ": value not admissible";
      }
      var parsed = item.v !== null;
      var kind = parsed ? verdictOf(item, k) : null;
      if (kind === "bad") {
        mark.classList.add("anchor-mismatch");
        title += ": mismatch";
      } else if (kind === "ok") {
        mark.classList.add("anchor-match");
      }
      mark.title = title;
      box.appendChild(mark);
      if (kind !== null) box.appendChild(verdictMark(kind, FIELD_LABELS[k]));
      cursor = end;
    });
    if (cursor < text.length) box.appendChild(document.createTextNode(text.slice(cursor)));
    return box;
  }

  function recordTable(item) {
    var table = el("table", "record");
    var head = el("tr");
    ["field", "reference", "parsed", ""].forEach(function (name) {
      head.appendChild(el("th", "", name));
    });
    var thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    var body = el("tbody");
    FIELDS.forEach(function (field, k) {
      var kind = verdictOf(item, k);
      var row = el("tr", "field-row field-" + field + " " + { ok: "match", bad: "mismatch", none: "unscored" }[kind]);
      row.dataset.field = field;
      var name = el("td", "field-name");
      name.appendChild(el("span", "swatch swatch-" + field));
      name.appendChild(document.createTextNode(FIELD_LABELS[k]));
      row.appendChild(name);
      row.appendChild(el("td", "ref data", item.r[k] === null ? NOT_ANNOTATED : item.r[k]));
      row.appendChild(el("td", item.v === null ? "pred data empty" : "pred data", item.v === null ? "—" : item.v[k]));
      var cell = el("td", "verdict-cell");
      cell.appendChild(verdictMark(kind, FIELD_LABELS[k]));
      var words = { ok: "match", bad: "mismatch", none: "not scored" }[kind];
      if (k === 0 && item.t !== null) words += " (T-F1 " + formatScore(item.t) + ")";
      cell.appendChild(document.createTextNode(" " + words));
      row.appendChild(cell);
      body.appendChild(row);
    });
    table.appendChild(body);
    return table;
  }

  function textBlock(text) {
    return el("div", "text-block data", text);
  }

  function itemDetail(item) {
    var box = el("div", "item-detail");
    box.appendChild(metaList(item));
    box.appendChild(block("Input", textBlock(item.x)));
    box.appendChild(block("Record: parsed vs reference", recordTable(item)));
    if (item.ctx) box.appendChild(block("Context", textBlock(item.ctx.join("\n")), true));
    box.appendChild(block("Rationale (raw output; anchors highlighted)", rationale(item), true));
    return box;
  }

  function openKey(index) {
    return state.run + ":" + index;
  }

  function itemNode(index) {
    var item = data.runs[state.run].items[index];
    var expanded = state.open.has(openKey(index));
    var li = el("li", "item " + (item.j ? "item-correct" : "item-incorrect"));
    li.dataset.index = String(index);
    li.appendChild(itemHead(item, expanded));
    if (expanded) li.appendChild(itemDetail(item));
    return li;
  }

  function toggle(li, open) {
    var index = parseInt(li.dataset.index, 10);
    var head = li.firstChild;
    var detail = li.querySelector(".item-detail");
    if (open === undefined) open = !detail;
    if (open && !detail) {
      li.appendChild(itemDetail(data.runs[state.run].items[index]));
      state.open.add(openKey(index));
    } else if (!open && detail) {
      detail.remove();
      state.open.delete(openKey(index));
    }
    head.setAttribute("aria-expanded", open ? "true" : "false");
  }

  function pageCount() {
    return Math.max(1, Math.ceil(state.filtered.length / pageSize()));
  }

  function render() {
    var size = pageSize();
    var pages = pageCount();
    state.page = Math.max(0, Math.min(state.page, pages - 1));
    var start = state.page * size;
    var fragment = document.createDocumentFragment();
    state.filtered.slice(start, start + size).forEach(function (index) {
      fragment.appendChild(itemNode(index));
    });
    ui.list.replaceChildren(fragment);
    ui.list.start = start + 1;
    ui.pageInput.max = String(pages);
    ui.pageInput.value = String(state.page + 1);
    ui.info.textContent = "of " + pages;
    var total = data.runs[state.run].items.length;
    ui.count.textContent = state.filtered.length + " of " + total + " items";
    ui.first.disabled = ui.prev.disabled = state.page === 0;
    ui.next.disabled = ui.last.disabled = state.page >= pages - 1;
    document.body.dataset.page = String(state.page + 1);
  }

  function goTo(page) {
    state.page = page;
    render();
  }

  function selectRun(index) {
    state.run = index;
    fillFilters();
    applyFilters();
  }

  data.runs.forEach(function (run, k) {
    addOption(ui.run, String(k), run.id + " · " + run.model + " · " + run.setting + " (N = " + run.items.length + ")");
  });
  ui.run.disabled = data.runs.length < 2;

  ui.run.addEventListener("change", function () {
    selectRun(parseInt(ui.run.value, 10) || 0);
  });
  [ui.j, ui.field, ui.category, ui.tag, ui.status].forEach(function (select) {
    select.addEventListener("change", applyFilters);
  });
  var searchTimer = null;
  ui.search.addEventListener("input", function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(applyFilters, 150);
  });
  $("filters").addEventListener("submit", function (event) {
    event.preventDefault();
    clearTimeout(searchTimer);
    applyFilters();
  });
  ui.reset.addEventListener("click", function () {
    fillFilters();
    applyFilters();
  });
  ui.first.addEventListener("click", function () {
    goTo(0);
  });
  ui.prev.addEventListener("click", function () {
    goTo(state.page - 1);
  });
  ui.next.addEventListener("click", function () {
    goTo(state.page + 1);
  });
  ui.last.addEventListener("click", function () {
    goTo(pageCount() - 1);
  });
  ui.pageInput.addEventListener("change", function () {
    var page = parseInt(ui.pageInput.value, 10);
    goTo(isNaN(page) ? 0 : page - 1);
  });
  ui.pageSize.addEventListener("change", function () {
    goTo(0);
  });
  ui.expand.addEventListener("click", function () {
    Array.prototype.forEach.call(ui.list.children, function (li) {
      toggle(li, true);
    });
  });
  ui.list.addEventListener("click", function (event) {
    var head = event.target.closest ? event.target.closest(".item-head") : null;
    if (head && ui.list.contains(head)) toggle(head.parentNode);
  });

  selectRun(0);
  document.body.dataset.ready = "true";
})();
