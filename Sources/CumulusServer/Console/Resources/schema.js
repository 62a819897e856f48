// The schema page (operators): a container's schema in CloudKit's schema language in both
// environments, import into development with a refusal marked at its line, the
// difference between development and production, deploy and reset, and who holds which
// security role. The changes are `cumulus schema`'s, made as the operator.

import { state, el, call, fragmentParameters, pageLink, table } from "./support.js";

/** The lines of `before` and `after` as a list of [mark, line]: " " kept, "-" only in
 * `before`, "+" only in `after` (a longest-common-subsequence diff; schemas are short). */
function lineDiff(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  const common = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const lines = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { lines.push([" ", a[i]]); i++; j++; }
    else if (j < b.length && (i === a.length || common[i][j + 1] >= common[i + 1][j])) { lines.push(["+", b[j]]); j++; }
    else { lines.push(["-", a[i]]); i++; }
  }
  return lines;
}

/** A refusal of schema text, marked at its line: the message, then the line with a caret
 * under the column the server named ("line L, column C: …"). */
function markedRefusal(message, text, editor) {
  const where = message.match(/^line (\d+), column (\d+): /);
  const parts = [el("p", { class: "error", id: "schema-error" }, message)];
  if (where) {
    const [line, column] = [Number(where[1]), Number(where[2])];
    const lines = text.split("\n");
    const source = lines[line - 1] ?? "";
    const gutter = `${line} | `;
    parts.push(el("pre", { class: "marked", id: "schema-error-line" },
      `${gutter}${source}\n${" ".repeat(gutter.length + Math.max(0, column - 1))}^`));
    // The editor selects the line, so fixing it starts there.
    const start = lines.slice(0, line - 1).reduce((total, item) => total + item.length + 1, 0);
    editor.focus();
    editor.setSelectionRange(start, start + source.length);
  }
  return parts;
}

function holdersTable(id, environment) {
  const rows = environment.holders.map((holder) => el("tr", {}, el("td", {}, holder.user), el("td", {}, holder.roles.join(", "))));
  return [
    el("p", { class: "muted" }, environment.roles.length ? `Custom roles: ${environment.roles.join(", ")}.` : "No custom roles declared."),
    rows.length ? table(id, ["User", "Roles"], rows) : el("p", { class: "muted" }, "No user holds a custom role."),
  ];
}

export async function schemaPage() {
  if (!state.session.operator) throw new Error(`the schema is for operators; ${state.session.user} is not one`);
  const parameters = fragmentParameters();
  const containers = await call("GET", "/console/api/containers");
  const container = parameters.get("container") || containers[0]?.name;
  const heading = el("h1", {}, "Schema");
  if (!container) return [heading, el("p", { class: "muted" }, "No container yet: mint an API token for one.")];
  const schema = await call("GET", `/console/api/schema/text?${new URLSearchParams({ container })}`);
  const chooser = el("select", { id: "schema-container" }, containers.map((item) =>
    el("option", { value: item.name, selected: item.name === container }, item.name)));
  chooser.addEventListener("change", () => { location.hash = pageLink("schema", { container: chooser.value }); });

  const editor = el("textarea", { id: "schema-text", rows: 14, spellcheck: "false" });
  editor.value = schema.development.text;
  const status = el("div", { id: "schema-status" });
  /** Runs a change, then shows the page again with what it made, or the refusal. */
  async function change(path, body, done) {
    status.replaceChildren(el("p", { class: "muted" }, "Working…"));
    try {
      await call("POST", path, { container, ...body });
      state.notice = done;
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    } catch (error) {
      status.replaceChildren(...markedRefusal(error.message, editor.value, editor));
    }
  }
  const confirmArea = el("div", { id: "schema-confirm" });
  function confirmThen(question, label, action) {
    confirmArea.className = "confirm";
    confirmArea.replaceChildren(el("p", {}, question),
      el("button", { type: "button", class: "danger", id: "schema-confirm-button", onclick: action }, label),
      el("button", { type: "button", class: "plain", onclick: () => { confirmArea.className = ""; confirmArea.replaceChildren(); } }, "Cancel"));
  }
  const diff = lineDiff(schema.production.text, schema.development.text);
  const changed = diff.some(([mark]) => mark !== " ");
  const notice = state.notice;
  state.notice = null;
  return [
    heading,
    el("div", { class: "filters" }, el("label", {}, "Container", chooser)),
    notice ? el("p", { class: "notice", id: "schema-notice" }, notice) : "",
    el("h2", {}, "Development"),
    el("p", { class: "muted" }, "Edit and import: the development schema is replaced; production data must stay readable, so what production has must stay."),
    editor,
    el("div", { class: "buttons" },
      el("button", { type: "button", id: "schema-import", onclick: () => change("/console/api/schema/import", { text: editor.value }, "Imported into development.") }, "Import into development"),
      el("button", { type: "button", class: "plain", id: "schema-deploy", disabled: !changed,
        onclick: () => confirmThen(`Deploy ${container}'s development schema to production? A deploy may only add.`, "Deploy",
          () => change("/console/api/schema/deploy", {}, "Deployed to production.")) }, "Deploy to production…"),
      el("button", { type: "button", class: "plain", id: "schema-reset", disabled: !changed,
        onclick: () => confirmThen(`Reset ${container}'s development schema to production's? What development added is dropped.`, "Reset",
          () => change("/console/api/schema/reset", {}, "Development reset to production's schema.")) }, "Reset development…")),
    confirmArea, status,
    el("h2", {}, "Development beside production"),
    changed
      ? el("pre", { class: "diff", id: "schema-diff" }, diff.filter(([mark]) => mark !== " ").map(([mark, line]) =>
        el("span", { class: mark === "+" ? "added" : "removed" }, `${mark} ${line}\n`)))
      : el("p", { class: "muted", id: "schema-same" }, "Development and production have the same schema."),
    el("h2", {}, "Production"),
    el("pre", { class: "schema", id: "schema-production" }, schema.production.text),
    el("h2", {}, "Security roles"),
    el("h3", {}, "Development"), ...holdersTable("roles-development", schema.development),
    el("h3", {}, "Production"), ...holdersTable("roles-production", schema.production),
  ];
}
