// The Cumulus console: one page, each view reachable by its URL's fragment
// (#/cluster). It talks to this node's /console endpoints only; the session is an
// HttpOnly cookie the page never sees, and each write sends the session's CSRF token.

import { state, $, el, call, fragmentParameters, pageLink, time, card, table } from "./support.js";
import { recordsPage, recordPage } from "./records.js";
import { schemaPage } from "./schema.js";
import { changeTokenPage, credentialsPage } from "./tokens.js";
import { runJob, jobsSection, diffPage, bisectPage } from "./jobs.js";
import { lineChart } from "./charts.js";

function showSignedIn(session) {
  state.session = session;
  showActing();
  if (!session) {
    state.stream?.close();
    state.stream = null;
  }
  $("signin").hidden = session !== null;
  $("nav").hidden = session === null;
  $("signout").hidden = session === null;
  $("who").textContent = session ? `${session.user}${session.operator ? " (operator)" : ""}` : "";
}

async function signIn(event) {
  event.preventDefault();
  $("signin-error").textContent = "";
  try {
    const session = await call("POST", "/console/session", { user: $("user").value, password: $("password").value });
    $("password").value = "";
    showSignedIn(session);
    await route();
  } catch (error) {
    $("signin-error").textContent = error.message;
  }
}

async function signOut() {
  try {
    await call("DELETE", "/console/session");
  } finally {
    showSignedIn(null);
    $("page").replaceChildren();
  }
}

/** The cluster page: this node, the cluster it sees, its followers and its history. */
async function clusterPage() {
  const status = await call("GET", "/console/api/node");
  const cards = [
    card("Role", status.role, `role-${status.role}`),
    card("Epoch", status.epoch),
    card("Head", status.head),
    card("Log", status.logID.slice(0, 12)),
  ];
  if (status.cluster) {
    cards.push(card("Cluster", status.cluster.name));
    cards.push(card("Leader", status.cluster.leader ? `${status.cluster.leader.node}, epoch ${status.cluster.leader.epoch}` : "none known"));
  }
  if (status.following) {
    cards.push(card("Following", status.following.leaderURL));
    cards.push(card("Behind", `${status.following.lagCommits} commits, ${status.following.lagMilliseconds} ms`));
  }
  const followers = status.followers.length === 0
    ? el("p", { class: "muted", id: "no-followers" }, "No follower has reported to this node.")
    : table("followers", ["Follower", "Applied", "Behind (commits)", "Behind (ms)", "Streams", "Last report"],
        status.followers.map((f) => el("tr", {},
          el("td", {}, f.name), el("td", {}, f.applied), el("td", {}, f.lagCommits), el("td", {}, f.lagMilliseconds),
          el("td", {}, f.openStreams), el("td", {}, `${f.sinceReportMilliseconds} ms ago`))));
  const history = table("history", ["When", "Role", "Epoch", "Why"], [...status.history].reverse().map((change) => el("tr", {},
    el("td", {}, time(change.atMilliseconds)),
    el("td", {}, change.leaderURL ? `${change.role} of ${change.leaderURL}` : change.role),
    el("td", {}, change.epoch), el("td", {}, change.reason))));
  if (status.semiSynchronous) {
    const sync = status.semiSynchronous;
    cards.push(card("Semi-synchronous", `${sync.replicas} replica${sync.replicas === 1 ? "" : "s"}, ${sync.timeoutMilliseconds} ms, then ${sync.fallback}; ${sync.fallbacks} fallbacks`));
  }
  // The last time this node took the lead after something else, and why.
  const changes = status.history ?? [];
  const failover = [...changes].reverse().find((change, index, reversed) => change.role === "leader" && reversed[index + 1] && reversed[index + 1].role !== "leader");
  if (failover) cards.push(card("Last failover", `${time(failover.atMilliseconds)}: ${failover.reason}`));
  return [
    el("h1", {}, "Cluster"),
    el("div", { class: "cards", id: "node" }, cards),
    el("h2", {}, "Followers"), followers,
    el("h2", {}, "The last minutes"), ...await chartsSection(),
    el("h2", {}, "Long work"), ...await jobsSection(),
    el("h2", {}, "History"), history,
  ];
}

/** Charts of the node's last minutes from its metrics: requests and errors a second,
 * request latency, commit groups and their fsync time, and each follower's lag. */
async function chartsSection() {
  const metrics = await call("GET", "/console/api/metrics");
  const points = metrics.points;
  if (points.length === 0) return [el("p", { class: "muted", id: "no-metrics" }, "Nothing measured yet.")];
  const times = points.map((point) => point.start);
  const perSecond = 1000 / metrics.intervalMilliseconds;
  const series = (name, value) => ({ name, points: points.map((point) => [point.start, value(point)]) });
  const followers = [...new Set(points.flatMap((point) => Object.keys(point.followers)))].sort();
  const charts = [
    lineChart("chart-requests", "Requests", "per second", [
      series("answered", (point) => point.requests * perSecond), series("errors (5xx)", (point) => point.errors * perSecond)], times),
    lineChart("chart-latency", "Request latency", "ms, histogram bound", [
      series("p50", (point) => point.p50), series("p99", (point) => point.p99)], times),
    lineChart("chart-groups", "Commit groups", "commits per group", [
      series("commits per group", (point) => point.groups ? point.commits / point.groups : null)], times),
    lineChart("chart-fsync", "Commit with fsync", "ms", [
      series("mean", (point) => point.commitMean), series("longest", (point) => point.commitMax)], times),
  ];
  if (followers.length > 0) {
    charts.push(lineChart("chart-lag", "Follower lag", "commits", followers.map((name) =>
      series(name, (point) => point.followers[name]?.commits ?? null)), times));
    charts.push(lineChart("chart-lag-ms", "Follower lag", "ms", followers.map((name) =>
      series(name, (point) => point.followers[name]?.milliseconds ?? null)), times));
  }
  return [el("div", { class: "charts" }, charts)];
}

/** The live log: every event of every commit as it is made, filtered as `cumulus log`
 * filters, newest first; the last 50 commits first. */
async function logPage() {
  // The server refuses the stream to others; the page says why at once.
  if (!state.session.operator) throw new Error(`the log is for operators; ${state.session.user} is not one`);
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const fields = ["zone", "record", "user", "type"];
  const inputs = Object.fromEntries(fields.map((name) => [name, el("input", { id: `log-${name}`, name, value: params.get(name) ?? "" })]));
  const form = el("form", { id: "log-filter", class: "filters" },
    fields.map((name) => el("label", {}, name, inputs[name])),
    el("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const name of fields) if (inputs[name].value) chosen.set(name, inputs[name].value);
    location.hash = `#/log?${chosen}`;
  });
  const body = el("tbody", {});
  const entries = table("log", ["Commit", "Time", "User", "Operation", "Zone", "Record", "Type", "Keys / cause", "Request"], body);
  const status = el("p", { class: "muted", id: "log-status" }, "Connecting…");
  const query = new URLSearchParams();
  for (const name of fields) if (params.get(name)) query.set(name, params.get(name));
  const stream = new EventSource(`/console/api/log/stream?${query}`);
  state.stream = stream;
  stream.onopen = () => { status.textContent = "Live: new commits appear at the top."; };
  stream.onerror = () => { status.textContent = "Disconnected; reconnecting…"; };
  stream.addEventListener("entry", (event) => {
    const entry = JSON.parse(event.data);
    const row = el("tr", {},
      el("td", {}, el("a", { href: `#/commit?sequence=${entry.sequence}` }, entry.sequence)), el("td", {}, entry.time), el("td", {}, entry.user), el("td", {}, entry.operation),
      el("td", {}, entry.zone ?? ""),
      el("td", {}, entry.recordID && entry.recordType
        ? el("a", { href: `#/history?${new URLSearchParams({ record: entry.recordID, zone: entry.zone ?? "", database: entry.database ?? "" })}` }, entry.recordID)
        : entry.recordID ?? ""),
      el("td", {}, entry.recordType ?? ""),
      el("td", {}, [entry.changedKeys.join(", "), entry.cause].filter(Boolean).join(" · ")),
      el("td", { class: "muted" }, entry.requestID));
    body.prepend(row);
    while (body.children.length > 500) body.lastElementChild.remove();
  });
  const chain = await chainSection();
  stream.addEventListener("entry", chain.refresh);
  return [el("h1", {}, "Log"), ...chain.parts, form, status, entries];
}

/** The hash chain's head, a verify of it, and an audit export of a range, each a job
 * with progress and a cancel; the export is verified against the log before it is
 * offered for download. */
async function chainSection() {
  const chain = await call("GET", "/console/api/commit?sequence=head");
  const area = el("div", { id: "chain-work" });
  const verify = el("button", { type: "button", id: "verify-chain", class: "plain", onclick: async () => {
    const job = await runJob({ kind: "verify" }, area);
    if (job.state !== "done") return;
    const result = job.result;
    area.replaceChildren(el("p", { class: result.valid ? "notice" : "error", id: "verify-result" }, result.valid
      ? `The chain holds: ${result.verified.toLocaleString()} commits from #${result.from} checked, each frame's checksum, contents and hash.`
      : `The chain breaks at #${result.firstBad}: ${result.problem}`));
  } }, "Verify the chain");
  const from = el("input", { id: "audit-from", type: "number", min: 1, placeholder: "the first commit" });
  const through = el("input", { id: "audit-through", type: "number", min: 1, placeholder: "the head" });
  const format = el("select", { id: "audit-format" }, el("option", { value: "jsonl" }, "JSON Lines"), el("option", { value: "csv" }, "CSV"));
  const exportForm = el("form", { id: "audit-form", class: "filters" },
    el("label", {}, "Export from", from), el("label", {}, "through", through), el("label", {}, "as", format),
    el("button", { type: "submit", class: "plain" }, "Audit export"));
  exportForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const range = {};
    if (from.value) range.from = Number(from.value);
    if (through.value) range.through = Number(through.value);
    const job = await runJob({ kind: "audit", ...range, format: format.value }, area);
    if (job.state !== "done") return;
    const result = job.result;
    area.replaceChildren(el("p", { class: result.valid ? "notice" : "error", id: "audit-result" },
      `${result.events.toLocaleString()} events, ${result.bytes.toLocaleString()} bytes; ${result.verification}. `,
      el("a", { href: `/console/api/jobs/download?id=${job.id}`, download: job.fileName, id: "audit-download" }, `Download ${job.fileName}`)));
  });
  const head = el("span", {});
  const showHead = (chain) => head.replaceChildren(`Head: commit #${chain.head}, chain hash `, el("code", {}, chain.headHash.slice(0, 16) + "…"),
    chain.firstRetained > 1 ? `; commits before #${chain.firstRetained} were dropped by retention.` : ".");
  showHead(chain);
  // The live log's commits move the head on: read again, at most once a second.
  let pending = null;
  const refresh = () => {
    pending ??= setTimeout(async () => {
      pending = null;
      if (head.isConnected) showHead(await call("GET", "/console/api/commit?sequence=head"));
    }, 1000);
  };
  return { parts: [el("p", { id: "chain-head" }, head, " ", verify), exportForm, area], refresh };
}

/** One commit: who, when, the request, its chain hash, and each event as its audit line. */
async function commitPage() {
  if (!state.session.operator) throw new Error(`commits are for operators; ${state.session.user} is not one`);
  const sequence = fragmentParameters().get("sequence") ?? "head";
  const commit = await call("GET", `/console/api/commit?sequence=${encodeURIComponent(sequence)}`);
  if (commit.sequence === undefined) return [el("h1", {}, "Commit"), el("p", { class: "muted" }, "The log holds no commit yet.")];
  const near = (n, label) => n >= commit.firstRetained && n >= 1 && n <= commit.head
    ? el("a", { href: `#/commit?sequence=${n}`, id: `commit-${label}` }, label === "before" ? `← #${n}` : `#${n} →`) : "";
  return [
    el("h1", { id: "commit-title" }, `Commit #${commit.sequence}`),
    el("p", { class: "buttons" }, near(commit.sequence - 1, "before"), near(commit.sequence + 1, "after"),
      el("a", { href: "#/log" }, "Live log")),
    el("div", { class: "cards detail", id: "commit" },
      card("Time", commit.time), card("User", commit.user || "(system)"), card("Request", commit.requestID),
      card("Chain hash", commit.hash)),
    el("h2", {}, `${commit.events.length} event${commit.events.length === 1 ? "" : "s"}`),
    table("commit-events", ["#", "Operation", "Database", "Zone", "Record", "Type", "Keys / cause"], commit.events.map((entry) => el("tr", {},
      el("td", {}, entry.event), el("td", {}, entry.operation), el("td", {}, entry.database ?? ""), el("td", {}, entry.zone ?? ""),
      el("td", {}, entry.recordID && entry.recordType
        ? el("a", { href: `#/history?${new URLSearchParams({ record: entry.recordID, zone: entry.zone ?? "", database: entry.database ?? "" })}` }, entry.recordID)
        : entry.recordID ?? ""),
      el("td", {}, entry.recordType ?? ""), el("td", {}, [entry.changedKeys.join(", "), entry.cause].filter(Boolean).join(" · "))))),
  ];
}

/** A record's timeline: every version with who, when, the request, the keys changed
 * from what to what, and how it ended (a cascade links to its owner's timeline). */
async function historyPage() {
  if (!state.session.operator) throw new Error(`histories are for operators; ${state.session.user} is not one`);
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const fields = ["record", "zone", "database"];
  const inputs = Object.fromEntries(fields.map((name) => [name, el("input", { id: `history-${name}`, name, value: params.get(name) ?? "" })]));
  const form = el("form", { id: "history-form", class: "filters" },
    fields.map((name) => el("label", {}, name, inputs[name])), el("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const name of fields) if (inputs[name].value) chosen.set(name, inputs[name].value);
    location.hash = `#/history?${chosen}`;
  });
  const heading = el("h1", {}, "History");
  if (!params.get("record")) return [heading, form, el("p", { class: "muted" }, "Name a record to see every version of it.")];
  let history;
  try {
    history = await call("GET", `/console/api/history?${params}`);
  } catch (error) {
    return [heading, form, el("p", { class: "error", id: "history-error" }, error.message)];
  }
  const rows = history.versions.map((version) => {
    const kind = version.cascadeOwner
      ? el("a", { href: `#/history?record=${encodeURIComponent(version.cascadeOwner)}&zone=${encodeURIComponent(version.cascadeZone)}` }, version.kind)
      : version.kind;
    const tag = version.tagBefore === version.tagAfter ? "" : `${version.tagBefore ?? "–"} → ${version.tagAfter ?? "–"}`;
    return el("tr", {},
      el("td", {}, version.sequence), el("td", {}, version.time), el("td", {}, version.user || "(system)"),
      el("td", {}, kind), el("td", {}, el("ul", { class: "changes" }, version.changes.map((change) => el("li", {}, change)))),
      el("td", {}, tag), el("td", { class: "muted" }, version.requestID));
  });
  return [
    heading, form,
    el("p", { id: "history-summary" }, `${history.record} in ${history.zone}, ${history.database}: ${history.versions.length} versions; ${history.exists ? "exists now" : "deleted"}`),
    table("history-versions", ["Commit", "Time", "User", "What", "Keys", "Tag", "Request"], rows),
  ];
}

/** Says, above every page, whom an operator acts as, with the way back. */
function showActing() {
  const banner = $("acting");
  const acting = state.session?.actingAs;
  banner.hidden = !acting;
  if (!acting) return banner.replaceChildren();
  banner.replaceChildren(
    `Acting as ${acting}: you see what they see, and change nothing. `,
    el("button", { type: "button", class: "plain", id: "stop-acting", onclick: () => actAs(null) }, "Stop acting"));
}

/** Starts acting as `user` (`null`: stops), then shows the records as they now see them. */
async function actAs(user) {
  const session = user === null
    ? await call("DELETE", "/console/session/act")
    : await call("POST", "/console/session/act", { user });
  state.session = session;
  showSignedIn(session);
  if (location.hash.startsWith("#/records")) await route();
  else location.hash = "#/records";
}

/** Acting as a user: the form, and every time an operator did, newest first. */
async function actingPage() {
  if (!state.session.operator) throw new Error(`acting as others is for operators; ${state.session.user} is not one`);
  const records = await call("GET", "/console/api/acting");
  const user = el("input", { id: "act-user", name: "user", placeholder: "user record name", required: true });
  const status = el("p", { class: "error", id: "act-error" });
  const form = el("form", { id: "act-form", class: "filters" }, el("label", {}, "User", user), el("button", { type: "submit" }, "Act as"), status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await actAs(user.value);
    } catch (error) {
      status.textContent = error.message;
    }
  });
  return [
    el("h1", {}, "Act as a user"),
    el("p", { class: "muted" }, "See the records exactly as one user sees them. Every start is recorded here, with who and when."),
    form,
    el("h2", {}, "Recorded"),
    records.length === 0 ? el("p", { class: "muted", id: "no-acting" }, "No operator has acted as anyone yet.")
      : table("acting-records", ["When", "Operator", "Acted as"], records.map((record) =>
        el("tr", {}, el("td", {}, time(record.at)), el("td", {}, record.operator), el("td", {}, record.user)))),
  ];
}

const pages = { records: recordsPage, record: recordPage, cluster: clusterPage, log: logPage, history: historyPage, acting: actingPage, schema: schemaPage, "change-token": changeTokenPage,
  commit: commitPage, diff: diffPage, bisect: bisectPage, credentials: credentialsPage };

/** Shows the page the URL's fragment names, once signed in. */
async function route() {
  if (!state.session) return;
  // `#/page` or `#/page?filters`: the page is what comes before a `/` or a `?`.
  const name = (location.hash.replace(/^#\//, "") || "records").split(/[/?]/)[0];
  const page = pages[name] ?? recordsPage;
  // A page's live stream ends with the page.
  state.stream?.close();
  state.stream = null;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("current", link.dataset.page === ({ record: "records", commit: "log", bisect: "diff" }[name] ?? name));
  for (const link of document.querySelectorAll("nav a.operator")) link.hidden = !state.session.operator;
  // A page that loads slowly must not replace one asked for after it.
  const visit = ++state.visits;
  try {
    const content = await page();
    if (visit === state.visits) $("page").replaceChildren(...content);
  } catch (error) {
    if (visit !== state.visits) return;
    if (error.status === 401) {
      showSignedIn(null);
      return;
    }
    $("page").replaceChildren(el("h1", {}, "Not available"), el("p", { class: "error", id: "page-error" }, error.message));
  }
}

async function start() {
  $("signin-form").addEventListener("submit", signIn);
  $("signout").addEventListener("click", signOut);
  window.addEventListener("hashchange", route);
  try {
    showSignedIn(await call("GET", "/console/session"));
  } catch {
    showSignedIn(null);
  }
  await route();
}

start();
