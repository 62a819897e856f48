// Long work the console starts on the node (verify, audit export, as of, diff): started,
// followed with a progress bar while the page polls, cancellable, its result shown.

import { el, call, table, time, fragmentParameters, pageLink, state } from "./support.js";

/** A job's progress as text: done of total, or done alone when the total is unknown. */
function progressText(job) {
  if (job.state === "queued") return "waiting for the job before it";
  if (job.total > 0) return `${Math.min(job.done, job.total).toLocaleString()} of ${job.total.toLocaleString()}`;
  return job.done > 0 ? job.done.toLocaleString() : "working";
}

/** A progress bar for `job`, as an element to update. */
function progressBar(job) {
  const bar = el("progress", { max: Math.max(job.total, 1), value: Math.min(job.done, Math.max(job.total, 1)) });
  if (job.total === 0) bar.removeAttribute("value");
  return bar;
}

/** Starts a job of `body` and shows it in `area` until it ends: a progress bar, what it
 * is doing and a Cancel button. Resolves with its last status (done, failed, cancelled). */
export async function runJob(body, area) {
  let job = await call("POST", "/console/api/jobs", body);
  const view = () => area.replaceChildren(el("div", { class: "job", id: "job" },
    el("p", {}, job.label),
    el("div", { class: "buttons" }, progressBar(job), el("span", { class: "muted", id: "job-progress" }, progressText(job)),
      el("button", { type: "button", class: "plain", id: "cancel-job", onclick: () => call("DELETE", `/console/api/jobs/job?id=${job.id}`) }, "Cancel"))));
  view();
  while (job.state === "queued" || job.state === "running") {
    await new Promise((resolve) => setTimeout(resolve, 250));
    job = await call("GET", `/console/api/jobs/job?id=${job.id}`);
    view();
  }
  if (job.state !== "done") {
    area.replaceChildren(el("p", { class: job.state === "failed" ? "error" : "muted", id: "job-ended" },
      job.state === "failed" ? `${job.label} failed: ${job.error}` : `${job.label}: cancelled.`));
  } else {
    area.replaceChildren();
  }
  return job;
}

/** Every job this node remembers, newest first, with its progress or outcome. */
export async function jobsSection() {
  const jobs = await call("GET", "/console/api/jobs");
  if (jobs.length === 0) return [el("p", { class: "muted", id: "no-jobs" }, "No long work has run since the node started.")];
  return [table("jobs", ["Started", "Work", "By", "State", "Progress"], jobs.map((job) => el("tr", {},
    el("td", {}, time(job.started)), el("td", {}, job.label), el("td", {}, job.owner),
    el("td", {}, job.state === "failed" ? `failed: ${job.error}` : job.state),
    el("td", {}, job.state === "running" || job.state === "queued" ? progressBar(job) : progressText(job)))))];
}

/** What changed between two points of the log (each a commit number or a time), as
 * `cumulus diff` computes it: records created, deleted (and how), and changed. */
export async function diffPage() {
  if (!state.session.operator) throw new Error(`diffs are for operators; ${state.session.user} is not one`);
  const parameters = fragmentParameters();
  const fields = ["from", "to", "zone", "database"];
  const inputs = Object.fromEntries(fields.map((name) => [name, el("input", { id: `diff-${name}`, name, value: parameters.get(name) ?? "",
    placeholder: name === "from" || name === "to" ? "commit number or time" : "(any)" })]));
  const form = el("form", { id: "diff-form", class: "filters" }, fields.map((name) => el("label", {}, name, inputs[name])),
    el("button", { type: "submit" }, "Compare"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = pageLink("diff", Object.fromEntries(fields.map((name) => [name, inputs[name].value])));
  });
  const heading = el("h1", {}, "Diff");
  if (!parameters.get("from") || !parameters.get("to")) {
    return [heading, form, el("p", { class: "muted" }, "Name two points of the log to see every record that differs between them. ",
      el("a", { href: "#/bisect", id: "to-bisect" }, "Or find when a query's result first changed."))];
  }
  const area = el("div", { id: "diff-result" });
  const body = { kind: "diff", from: parameters.get("from"), to: parameters.get("to") };
  for (const name of ["zone", "database"]) if (parameters.get(name)) body[name] = parameters.get(name);
  const shown = [heading, form, area];
  (async () => {
    try {
      const job = await runJob(body, area);
      if (job.state !== "done") return;
      const result = job.result;
      area.replaceChildren(
        el("p", { id: "diff-summary" }, `From #${result.from} to #${result.to}: ${result.count} record${result.count === 1 ? " differs" : "s differ"}${result.count > result.differences.length ? ` (the first ${result.differences.length} listed)` : ""}.`),
        result.differences.length === 0 ? "" : table("diff-records", ["Record", "Zone", "Type", "What", "Keys"], result.differences.map((difference) => el("tr", {},
          el("td", {}, el("a", { href: pageLink("history", { record: difference.record, zone: difference.zone.split(":")[0] }) }, difference.record)),
          el("td", {}, difference.zone), el("td", {}, difference.recordType), el("td", {}, difference.kind),
          el("td", {}, el("ul", { class: "changes" }, difference.changes.map((change) => el("li", {}, change))))))));
    } catch (error) {
      area.replaceChildren(el("p", { class: "error", id: "diff-error" }, error.message));
    }
  })();
  return shown;
}

/** The first commit after which a query's result changed as asked (`cumulus bisect`):
 * the log walked once, keeping the records that match, with progress and a cancel. */
export async function bisectPage() {
  if (!state.session.operator) throw new Error(`bisect is for operators; ${state.session.user} is not one`);
  const parameters = fragmentParameters();
  const type = el("input", { id: "bisect-type", name: "type", value: parameters.get("type") ?? "", placeholder: "record type", required: true });
  const query = el("input", { id: "bisect-query", name: "query", value: parameters.get("query") ?? "", placeholder: "done == 1 AND priority > 3", required: true });
  const when = el("select", { id: "bisect-when", name: "when" }, [["non-empty", "became non-empty"], ["empty", "became empty"], ["count-changed", "changed its count"]]
    .map(([value, label]) => el("option", { value, selected: value === (parameters.get("when") ?? "non-empty") }, label)));
  const zone = el("input", { id: "bisect-zone", name: "zone", value: parameters.get("zone") ?? "", placeholder: "(any)" });
  const form = el("form", { id: "bisect-form", class: "filters" },
    el("label", {}, "Record type", type), el("label", {}, "Predicate", query), el("label", {}, "The result", when), el("label", {}, "Zone", zone),
    el("button", { type: "submit" }, "Find the commit"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = pageLink("bisect", { type: type.value, query: query.value, when: when.value, zone: zone.value });
  });
  const heading = el("h1", {}, "Bisect");
  const intro = el("p", { class: "muted" }, "The first commit after which a query's result changed as asked: say what should never hold, and find when it first did. ",
    el("a", { href: "#/diff" }, "Diff two points instead."));
  if (!parameters.get("type") || !parameters.get("query")) return [heading, intro, form];
  const area = el("div", { id: "bisect-result" });
  const body = { kind: "bisect", type: parameters.get("type"), query: parameters.get("query"), when: parameters.get("when") ?? "non-empty" };
  if (parameters.get("zone")) body.zone = parameters.get("zone");
  (async () => {
    try {
      const job = await runJob(body, area);
      if (job.state !== "done") return;
      const result = job.result;
      area.replaceChildren(result.found
        ? el("div", { id: "bisect-found" },
          el("p", {}, "First at ", el("a", { href: `#/commit?sequence=${result.sequence}` }, `commit #${result.sequence}`),
            `, ${result.time}, by ${result.user || "(system)"}, request ${result.requestID}: ${result.countBefore} matching before, ${result.countAfter} after.`),
          el("ul", {}, result.changed.map((name) => el("li", {}, el("a", { href: pageLink("history", { record: name, zone: parameters.get("zone") ?? "" }) }, name)))))
        : el("p", { class: "muted", id: "bisect-none" }, "No commit changed the result that way."));
    } catch (error) {
      area.replaceChildren(el("p", { class: "error", id: "bisect-error" }, error.message));
    }
  })();
  return [heading, intro, form, area];
}
