// Operators' token pages: the node's credentials (API tokens, web auth tokens,
// server-to-server keys) minted and revoked; a client's change token, pasted, and what
// it names.

import { state, el, call, card, time, table } from "./support.js";

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

/** The credentials page: each kind listed by IDs that name a token without being it,
 * with a form to mint one (shown once, here, never again) and a button to revoke each. */
export async function credentialsPage() {
  if (!state.session.operator) throw new Error(`credentials are for operators; ${state.session.user} is not one`);
  const status = el("div", { id: "credentials-status" });
  const lists = el("div", {});
  async function act(body) {
    status.replaceChildren();
    try {
      const answer = await call("POST", "/console/api/credentials", body);
      show(answer);
      const made = answer.made ?? {};
      if (made.token) {
        status.replaceChildren(el("div", { class: "confirm" },
          el("p", {}, "The new token, shown this once: copy it now."), el("code", { id: "minted-token" }, made.token)));
      } else if (made.keyID) {
        status.replaceChildren(el("div", { class: "confirm" },
          el("p", {}, `Key registered; its requests act as ${made.user}. Clients send this key ID:`), el("code", { id: "minted-key" }, made.keyID)));
      }
    } catch (error) {
      status.replaceChildren(el("p", { class: "error", id: "credentials-error" }, error.message));
    }
  }
  const revoke = (label, body) => el("button", { type: "button", class: "plain revoke", onclick: () => act(body) }, label);
  function show(answer) {
    const containers = [...new Set(answer.apiTokens.map((token) => token.container))].sort();
    const containerList = el("datalist", { id: "credential-containers" }, containers.map((name) => el("option", { value: name })));
    const apiForm = el("form", { id: "mint-api-token", class: "filters" },
      el("label", {}, "Container", el("input", { name: "container", list: "credential-containers", required: true })),
      el("label", {}, "Environment", el("select", { name: "environment" }, el("option", { value: "development" }, "development"), el("option", { value: "production" }, "production"))),
      el("label", {}, "Allowed web origins, one a line", el("textarea", { name: "origins", rows: 1, placeholder: "https://app.example.com" })),
      el("button", { type: "submit" }, "Mint API token"));
    apiForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const form = new FormData(apiForm);
      act({ action: "mint-api-token", container: form.get("container"), environment: form.get("environment"),
        origins: String(form.get("origins")).split("\n").map((line) => line.trim()).filter(Boolean) });
    });
    const webForm = el("form", { id: "mint-web-auth-token", class: "filters" },
      el("label", {}, "User", el("select", { name: "user" }, answer.users.map((user) => el("option", { value: user }, user)))),
      el("label", {}, "Container", el("input", { name: "container", list: "credential-containers", required: true })),
      el("button", { type: "submit" }, "Mint web auth token"));
    webForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const form = new FormData(webForm);
      act({ action: "mint-web-auth-token", user: form.get("user"), container: form.get("container") });
    });
    const keyForm = el("form", { id: "add-server-key", class: "query" },
      el("label", {}, "Container", el("input", { name: "container", list: "credential-containers", required: true })),
      el("label", {}, "Public key (P-256, PEM)", el("textarea", { name: "pem", rows: 4, required: true, placeholder: "-----BEGIN PUBLIC KEY-----" })),
      el("div", { class: "buttons" }, el("button", { type: "submit" }, "Register server-to-server key")));
    keyForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const form = new FormData(keyForm);
      act({ action: "add-server-key", container: form.get("container"), pem: form.get("pem") });
    });
    const short = (id) => el("code", { title: id }, `${id.slice(0, 12)}…`);
    lists.replaceChildren(containerList,
      el("h2", {}, "API tokens"),
      answer.apiTokens.length === 0 ? el("p", { class: "muted" }, "None.") : table("api-tokens", ["ID", "Container", "Environment", "Web origins", ""],
        answer.apiTokens.map((token) => el("tr", {}, el("td", {}, short(token.id)), el("td", {}, token.container), el("td", {}, token.environment),
          el("td", {}, token.origins.join(", ") || "none"), el("td", {}, revoke("Revoke", { action: "revoke-api-token", id: token.id }))))),
      apiForm,
      el("h2", {}, "Web auth tokens"),
      answer.webAuthTokens.length === 0 ? el("p", { class: "muted" }, "None.") : table("web-auth-tokens", ["ID", "User", "Container", "Ends", ""],
        answer.webAuthTokens.map((token) => el("tr", {}, el("td", {}, short(token.id)), el("td", {}, token.user), el("td", {}, token.container),
          el("td", {}, token.expires ? time(token.expires) : "when revoked"), el("td", {}, revoke("Revoke", { action: "revoke-web-auth-token", id: token.id }))))),
      webForm,
      el("h2", {}, "Server-to-server keys"),
      answer.serverKeys.length === 0 ? el("p", { class: "muted" }, "None.") : table("server-keys", ["Key ID", "Container", "Acts as", ""],
        answer.serverKeys.map((key) => el("tr", {}, el("td", {}, short(key.keyID)), el("td", {}, key.container), el("td", {}, key.user),
          el("td", {}, revoke("Remove", { action: "remove-server-key", keyID: key.keyID }))))),
      keyForm);
  }
  show(await call("GET", "/console/api/credentials"));
  return [
    el("h1", {}, "Credentials"),
    el("p", { class: "muted" }, "Tokens are listed by the SHA-256 the node keeps of them: a listed ID signs no one in. A token minted here is shown once."),
    status, lists,
  ];
}
