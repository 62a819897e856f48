// What every console page shares: the session, building elements, calling the server.

/** The signed-in session (`null`: nobody), the open live stream if any, and how many
 * pages were asked for (a page shows only if none was asked for after it), and what the
 * page shown next should say happened (a change it made). */
export const state = { session: null, stream: null, visits: 0, notice: null };

export const $ = (id) => document.getElementById(id);

/** Builds an element: tag, attributes, children (strings become text, never HTML). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  }
  return node;
}

/** Calls a console endpoint; writes, and every Web Services call, carry the CSRF
 * token. Throws the server's reason, with its status and body. */
export async function call(method, path, body) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if ((method !== "GET" || path.startsWith("/console/database/")) && state.session) {
    headers["X-Cumulus-CSRF"] = state.session.csrf;
  }
  const answer = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await answer.json().catch(() => null);
  if (!answer.ok) {
    const error = new Error(json?.reason ?? `${method} ${path}: ${answer.status}`);
    error.status = answer.status;
    error.body = json;
    throw error;
  }
  return json;
}

/** The parameters after the `?` of the URL's fragment. */
export function fragmentParameters() {
  return new URLSearchParams(location.hash.split("?")[1] ?? "");
}

/** `#/page?parameters`, dropping empty ones. */
export function pageLink(page, parameters) {
  const kept = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined && value !== null && value !== "") kept.set(name, value);
  const query = kept.toString();
  return `#/${page}${query ? `?${query}` : ""}`;
}

export function time(milliseconds) {
  return new Date(milliseconds).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

export function card(label, value, className = "") {
  return el("div", { class: "card" }, el("div", { class: "label" }, label), el("div", { class: `value ${className}` }, value));
}

/** A table: headings, then rows of cells, or a `tbody` that rows are added to later
 * (a live stream, a next page). Each cell is labelled with its column's heading, rows
 * added later too, so a phone's screen can show each row as a card of labelled
 * lines (`table.stacked` in console.css) instead of a table scrolling sideways. */
export function table(id, headings, rows) {
  const later = rows instanceof HTMLTableSectionElement;
  const body = later ? rows : el("tbody", {}, rows);
  const label = (row) => [...row.cells].forEach((cell, index) => { cell.dataset.label = headings[index] ?? ""; });
  [...body.rows].forEach(label);
  if (later) {
    new MutationObserver((changes) => changes.forEach((change) => change.addedNodes.forEach((node) => {
      if (node instanceof HTMLTableRowElement) label(node);
    }))).observe(body, { childList: true });
  }
  return el("div", { class: "scroll" }, el("table", { id, class: "stacked" },
    el("thead", {}, el("tr", {}, headings.map((heading) => el("th", {}, heading)))),
    body));
}
