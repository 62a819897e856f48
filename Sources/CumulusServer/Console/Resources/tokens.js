// Operators' token pages: a client's change token, pasted, and what it names.

import { state, el, call, card, time } from "./support.js";

/** Describes a change token: where it stands in which feed, how old what it covers is,
 * its lineage beside this node's, and whether this node would take it. */
function report(answer) {
  const behind = answer.feedHead - answer.position;
  const cards = [
    card("Kind", `${answer.kind} token`),
    card(answer.kind === "zone" ? "Zone" : "Database", answer.zone ?? answer.database),
    card("Position", `${answer.position}${answer.offset ? ` (+${answer.offset} changes)` : ""} of ${answer.feedHead}`),
    card("Behind the feed", behind > 0 ? `${behind} entries` : behind === 0 ? "up to date" : `${-behind} entries ahead`),
    card("Covers up to", answer.lastCovered ? `commit #${answer.lastCovered}` : "nothing yet"),
    card("Age", answer.lastCoveredTime ? `${age(Date.now() - answer.lastCoveredTime)} (${time(answer.lastCoveredTime)})` : "unknown"),
    card("Lineage", `epoch ${answer.epoch}; this node: epoch ${answer.nodeEpoch}${answer.epochEnd ? `, epoch ${answer.epoch} ended at #${answer.epochEnd}` : ""}`),
  ];
  if (answer.kind === "zone") {
    cards.push(card("Zone incarnation", answer.currentIncarnation === undefined
      ? `${answer.incarnation}; the zone is gone`
      : `${answer.incarnation}${answer.currentIncarnation === answer.incarnation ? "" : `; now ${answer.currentIncarnation}`}`));
  }
  if (!answer.sameLog) cards.push(card("Log", "another server's", "role-superseded"));
  const verdict = answer.refusal
    ? el("p", { class: "error", id: "token-verdict" }, `Expired (${answer.refusal.serverErrorCode}): ${answer.refusal.reason}`)
    : el("p", { class: "notice", id: "token-verdict" }, "Valid: this node serves changes from it.");
  return [verdict, el("div", { class: "cards detail", id: "token-report" }, cards)];
}

function age(milliseconds) {
  const seconds = Math.max(0, Math.round(milliseconds / 1000));
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} days`;
}

export async function changeTokenPage() {
  if (!state.session.operator) throw new Error(`change tokens are for operators; ${state.session.user} is not one`);
  const input = el("textarea", { id: "token-text", rows: 3, spellcheck: "false", placeholder: "a syncToken, as the client holds it" });
  const result = el("div", { id: "token-result" });
  const form = el("form", { id: "token-form", class: "query" }, el("label", {}, "Change token", input),
    el("div", { class: "buttons" }, el("button", { type: "submit" }, "Read it")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      result.replaceChildren(...report(await call("POST", "/console/api/change-token", { token: input.value })));
    } catch (error) {
      result.replaceChildren(el("p", { class: "error", id: "token-verdict" }, error.message));
    }
  });
  return [
    el("h1", {}, "Change token"),
    el("p", { class: "muted" }, "Paste a client's sync token: what it names, how far behind it is, and whether this node would take it. It is sent in the request's body, never in a URL."),
    form, result,
  ];
}
