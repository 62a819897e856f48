// The records pages: containers, zones, a query builder offering what the schema's
// indexes allow, a record with its typed fields, references and referrers, editing
// with conflicts shown side by side, and deleting with what a delete would take.
// Everything is read and written through the Web Services API under
// /console/database/1/…, as the signed-in user (or the user an operator acts as).

import { state, el, call, fragmentParameters, pageLink, time, table } from "./support.js";
import { runJob } from "./jobs.js";

const pageSize = 20;
const comparators = {
  queryable: ["EQUALS", "NOT_EQUALS"],
  sortable: ["LESS_THAN", "LESS_THAN_OR_EQUALS", "GREATER_THAN", "GREATER_THAN_OR_EQUALS"],
  text: ["BEGINS_WITH"],
};
/** The value types the editor writes; any other field is shown and kept as it is. */
const editableTypes = ["STRING", "INT64", "DOUBLE", "TIMESTAMP", "REFERENCE", "STRING_LIST", "INT64_LIST"];

/** Where the records pages are, from the URL: container, environment, database, zone. */
function placeOf(parameters) {
  return {
    container: parameters.get("container") ?? "",
    environment: parameters.get("environment") || "development",
    database: parameters.get("database") || "private",
    zone: parameters.get("zone") || "_defaultZone",
    zoneOwner: parameters.get("zoneOwner") ?? "",
    asOf: parameters.get("asOf") ?? "",
  };
}

/** A Web Services call in the place's database (as of a past commit, if the place is). */
function api(place, operation, body = {}) {
  const path = `/console/database/1/${encodeURIComponent(place.container)}/${place.environment}/${place.database}/${operation}`;
  return call("POST", place.asOf ? `${path}?${new URLSearchParams({ asOf: place.asOf })}` : path, body);
}

function zoneIDOf(place) {
  return place.zoneOwner ? { zoneName: place.zone, ownerName: place.zoneOwner } : { zoneName: place.zone };
}

/** A console read's query naming the place and a record. */
function placeQuery(place, record) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...place, record })) if (value) query.set(name, value);
  return query.toString();
}

/** The wire type a schema's field type is written as (`LIST<STRING>` is `STRING_LIST`). */
function wireType(schemaType) {
  const list = schemaType.match(/^LIST<(.+)>$/);
  const base = (list ? list[1] : schemaType).replace(/^ENCRYPTED /, "").replace("ASSET", "ASSETID").split(" ")[0];
  return list ? `${base}_LIST` : base;
}

/** A field value from what a person typed, for `type`; throws a reason when it does not parse. */
function wireValue(type, text, action = "NONE") {
  const number = (item) => {
    const value = Number(item);
    if (item.trim() === "" || !Number.isFinite(value)) throw new Error(`${item} is not a number`);
    if (type.startsWith("INT64") && !Number.isInteger(value)) throw new Error(`${item} is not a whole number`);
    return value;
  };
  switch (type) {
    case "STRING": return text;
    case "INT64": case "DOUBLE": return number(text);
    case "TIMESTAMP": {
      const value = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
      if (!Number.isFinite(value)) throw new Error(`${text} is not a time`);
      return value;
    }
    case "REFERENCE": return { recordName: text, action };
    case "STRING_LIST": return text.split(",").map((item) => item.trim()).filter((item) => item !== "");
    case "INT64_LIST": return text.split(",").map((item) => item.trim()).filter((item) => item !== "").map(number);
    default: throw new Error(`${type} values are not edited here`);
  }
}

/** What a person edits for a stored value. */
function editableText(field) {
  switch (field.type) {
    case "TIMESTAMP": return new Date(field.value).toISOString();
    case "REFERENCE": return field.value.recordName;
    case "STRING_LIST": case "INT64_LIST": return field.value.join(", ");
    default: return String(field.value);
  }
}

/** A stored value as the page shows it: references link to their target. */
function shownValue(place, field) {
  const type = field.type ?? "";
  if (type.startsWith("ENCRYPTED_")) return el("span", { class: "muted" }, "encrypted, not shown");
  const one = (value, itemType) => {
    switch (itemType) {
      case "TIMESTAMP": return time(value);
      case "REFERENCE": {
        const target = { ...place, zone: value.zoneID?.zoneName ?? place.zone, zoneOwner: value.zoneID?.ownerName ?? place.zoneOwner };
        return el("a", { href: pageLink("record", { ...target, name: value.recordName }), class: "reference" },
          value.recordName, value.action && value.action !== "NONE" ? ` (${value.action})` : "");
      }
      case "ASSETID": return el("span", {},
        value.downloadURL ? el("a", { href: value.downloadURL, download: "" }, `download (${value.size} bytes)`) : `${value.size} bytes`,
        value.downloadURL ? el("img", { src: value.downloadURL, alt: "", class: "preview", onerror: (event) => event.target.remove() }) : "");
      case "LOCATION": return `${value.latitude}, ${value.longitude}`;
      case "BYTES": return el("span", { class: "muted" }, `${atob(value).length} bytes`);
      default: return String(value);
    }
  };
  if (type.endsWith("_LIST")) {
    const itemType = type.slice(0, -5).replace("ASSET", "ASSETID").replace("ASSETIDID", "ASSETID");
    return el("ul", { class: "values" }, field.value.map((value) => el("li", {}, one(value, itemType))));
  }
  return one(field.value, type);
}

function problem(message, id = "records-error") {
  return el("p", { class: "error", id }, message);
}

/** The container, environment and database pickers; choosing one moves the URL. */
function placeChooser(place, containers) {
  const select = (name, options, chosen) => el("select", { name, id: `place-${name}` },
    options.map((option) => el("option", { value: option, selected: option === chosen }, option)));
  const known = containers.find((container) => container.name === place.container);
  const form = el("form", { id: "place", class: "filters" },
    el("label", {}, "Container", select("container", containers.map((container) => container.name), place.container)),
    el("label", {}, "Environment", select("environment", known?.environments ?? ["development", "production"], place.environment)),
    el("label", {}, "Database", select("database", ["private", "public", "shared"], place.database)));
  form.addEventListener("change", () => {
    const chosen = Object.fromEntries(new FormData(form));
    location.hash = pageLink("records", { ...chosen, asOf: place.asOf });
  });
  return form;
}

/** The zones of a private or shared database: each a link, a form to create one, and
 * deleting the one shown (asked twice, saying it takes its records). */
async function zonesSection(place) {
  let zones;
  try {
    zones = (await api(place, "zones/list")).zones;
  } catch (error) {
    return [el("h2", {}, "Zones"), problem(error.message, "zones-error")];
  }
  const links = el("ul", { class: "zones", id: "zones" }, zones.map((zone) => {
    const zoneName = zone.zoneID.zoneName;
    const owner = place.database === "shared" ? zone.zoneID.ownerName : "";
    const current = zoneName === place.zone && (owner || "") === (place.zoneOwner || "");
    return el("li", { class: current ? "current" : "" },
      el("a", { href: pageLink("records", { ...place, zone: zoneName, zoneOwner: owner, type: "" }) },
        owner ? `${zoneName} (${owner})` : zoneName));
  }));
  const parts = [el("h2", {}, "Zones"), links];
  if (place.database === "private" && !place.asOf) {
    const name = el("input", { id: "new-zone", name: "zone", placeholder: "New zone's name", required: true });
    const status = el("p", { class: "error", id: "zone-error" });
    const create = el("form", { id: "create-zone", class: "filters" }, el("label", {}, "Zone", name), el("button", { type: "submit" }, "Create zone"), status);
    create.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        const answer = await api(place, "zones/modify", { operations: [{ operationType: "create", zone: { zoneID: { zoneName: name.value } } }] });
        const failed = answer.zones?.find((zone) => zone.serverErrorCode);
        if (failed) throw new Error(failed.reason);
        location.hash = pageLink("records", { ...place, zone: name.value, type: "" });
      } catch (error) {
        status.textContent = error.message;
      }
    });
    parts.push(create);
    if (place.zone !== "_defaultZone") parts.push(deleteZoneControl(place));
  }
  return parts;
}

function deleteZoneControl(place) {
  const area = el("div", {});
  const ask = el("button", { type: "button", class: "danger", id: "delete-zone" }, `Delete zone ${place.zone}…`);
  ask.addEventListener("click", () => {
    area.className = "confirm";
    area.replaceChildren(
      el("p", {}, `Deleting zone ${place.zone} deletes every record in it. This cannot be undone.`),
      el("button", { type: "button", class: "danger", id: "confirm-delete-zone", onclick: async () => {
        try {
          await api(place, "zones/modify", { operations: [{ operationType: "delete", zone: { zoneID: zoneIDOf(place) } }] });
          location.hash = pageLink("records", { ...place, zone: "", type: "" });
        } catch (error) {
          area.append(problem(error.message));
        }
      } }, "Delete the zone"),
      el("button", { type: "button", class: "plain", onclick: () => { area.className = ""; area.replaceChildren(ask); } }, "Cancel"));
  });
  area.append(ask);
  return area;
}

/** The shares of the zone shown (the owner's private database): zone-wide or of a
 * record's hierarchy, the public permission, and each participant with theirs. */
async function sharesSection(place) {
  const query = new URLSearchParams();
  for (const name of ["container", "environment", "database", "zone"]) query.set(name, place[name]);
  let shares;
  try {
    shares = await call("GET", `/console/api/records/shares?${query}`);
  } catch (error) {
    return [el("h2", {}, "Shares"), problem(error.message, "shares-error")];
  }
  if (shares.length === 0) return [];
  return [el("h2", {}, `Shares of ${place.zone}`), table("shares", ["Share", "Of", "Public", "Participants"], shares.map((share) => el("tr", {},
    el("td", {}, el("a", { href: pageLink("record", { ...place, name: share.recordName }) }, share.recordName)),
    el("td", {}, share.root ? el("a", { href: pageLink("record", { ...place, name: share.root }) }, share.root) : "the whole zone"),
    el("td", {}, share.publicPermission),
    el("td", {}, el("ul", { class: "values" }, share.participants.map((participant) =>
      el("li", {}, `${participant.userIdentity.userRecordName}: ${participant.permission}, ${participant.type}, ${participant.acceptanceStatus}`)))))))];
}

/** The user's subscriptions in this database, as `subscriptions/list` answers them. */
async function subscriptionsSection(place) {
  let subscriptions;
  try {
    subscriptions = (await api(place, "subscriptions/list")).subscriptions ?? [];
  } catch (error) {
    return [el("h2", {}, "Subscriptions"), problem(error.message, "subscriptions-error")];
  }
  if (subscriptions.length === 0) return [el("h2", {}, "Subscriptions"), el("p", { class: "muted", id: "no-subscriptions" }, "None in this database.")];
  return [el("h2", {}, "Subscriptions"), table("subscriptions", ["ID", "Kind", "On", "Fires on"], subscriptions.map((subscription) => el("tr", {},
    el("td", {}, subscription.subscriptionID), el("td", {}, subscription.subscriptionType ?? ""),
    el("td", {}, subscription.query?.recordType ?? subscription.zoneID?.zoneName ?? "the database"),
    el("td", {}, (subscription.firesOn ?? []).join(", ")))))];
}

/** The query builder: a record type, filters on the fields its indexes let a query
 * filter on, and a sort on a sortable field. Submitting moves the URL. */
function queryBuilder(place, schema, parameters) {
  const types = schema.recordTypes;
  const type = el("input", { id: "query-type", name: "type", list: "record-types", value: parameters.get("type") ?? "", required: true, autocomplete: "off" });
  const typeList = el("datalist", { id: "record-types" }, types.map((recordType) => el("option", { value: recordType.name })));
  const fieldsOf = () => types.find((recordType) => recordType.name === type.value)?.fields ?? [];
  const filters = el("div", { id: "query-filters", class: "rows" });
  const sortField = el("select", { id: "query-sort", name: "sort" });
  const sortOrder = el("select", { id: "query-order", name: "order" },
    el("option", { value: "asc" }, "ascending"), el("option", { value: "desc" }, "descending"));

  function comparatorsFor(field) {
    if (!field) return [];
    const text = field.type === "STRING" && field.queryable;
    return [...(field.queryable ? comparators.queryable : []), ...(field.sortable ? comparators.sortable : []), ...(text ? comparators.text : [])];
  }
  function filterRow(saved = {}) {
    const filterable = fieldsOf().filter((field) => field.queryable || field.sortable);
    const field = el("select", { class: "filter-field" }, filterable.map((f) => el("option", { value: f.name, selected: f.name === saved.field }, f.name)));
    const comparator = el("select", { class: "filter-comparator" });
    const refill = () => {
      const chosen = filterable.find((f) => f.name === field.value);
      comparator.replaceChildren(...comparatorsFor(chosen).map((c) => el("option", { value: c, selected: c === saved.comparator }, c)));
    };
    field.addEventListener("change", refill);
    refill();
    const value = el("input", { class: "filter-value", value: saved.value ?? "", placeholder: "value" });
    const row = el("div", { class: "filter-row" }, field, comparator, value,
      el("button", { type: "button", class: "plain", onclick: () => row.remove() }, "Remove"));
    return row;
  }
  function refillSorts() {
    const chosen = (parameters.get("sort") ?? "").split("|")[0];
    sortField.replaceChildren(el("option", { value: "" }, "(none)"),
      ...fieldsOf().filter((field) => field.sortable).map((field) => el("option", { value: field.name, selected: field.name === chosen }, field.name)));
  }
  type.addEventListener("change", () => { filters.replaceChildren(); refillSorts(); });
  refillSorts();
  if ((parameters.get("sort") ?? "").endsWith("|desc")) sortOrder.value = "desc";
  for (const saved of parameters.getAll("filter")) {
    const [field, comparator, ...rest] = saved.split("|");
    filters.append(filterRow({ field, comparator, value: rest.join("|") }));
  }
  const form = el("form", { id: "query", class: "query" },
    el("label", {}, "Record type", type, typeList),
    el("div", { class: "label-like" }, "Filters", filters,
      el("button", { type: "button", class: "plain", id: "add-filter", onclick: () => filters.append(filterRow()) }, "+ Filter")),
    el("div", { class: "filters" }, el("label", {}, "Sort by", sortField), el("label", {}, "Order", sortOrder)),
    el("div", { class: "buttons" },
      el("button", { type: "submit", id: "run-query" }, "Query"),
      place.asOf ? "" : el("a", { href: pageLink("record", { ...place, type: type.value || parameters.get("type") || "", create: "1" }), id: "new-record", class: "button plain" }, "New record")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const [name, value] of Object.entries(place)) if (value) chosen.set(name, value);
    chosen.set("type", type.value);
    for (const row of filters.querySelectorAll(".filter-row")) {
      const [field, comparator, value] = [...row.querySelectorAll("select, input")].map((input) => input.value);
      if (field && comparator) chosen.append("filter", `${field}|${comparator}|${value}`);
    }
    if (sortField.value) chosen.set("sort", `${sortField.value}|${sortOrder.value}`);
    location.hash = `#/records?${chosen}`;
  });
  return form;
}

/** The query the URL names, as `records/query` takes it. */
function queryOf(parameters, schema) {
  const recordType = parameters.get("type");
  const fields = schema.recordTypes.find((type) => type.name === recordType)?.fields ?? [];
  const filterBy = parameters.getAll("filter").map((saved) => {
    const [fieldName, comparator, ...rest] = saved.split("|");
    const field = fields.find((f) => f.name === fieldName);
    const type = wireType(field?.type ?? "STRING");
    return { fieldName, comparator, fieldValue: { value: wireValue(type, rest.join("|")), type } };
  });
  const [sortName, order] = (parameters.get("sort") ?? "").split("|");
  const sortBy = sortName ? [{ fieldName: sortName, ascending: order !== "desc" }] : [];
  return { recordType, filterBy, sortBy };
}

/** The query's records, a page at a time (the next page by the answer's cursor). */
async function results(place, parameters, schema) {
  let query;
  try {
    query = queryOf(parameters, schema);
  } catch (error) {
    return [problem(error.message)];
  }
  const body = el("tbody", {});
  const columns = (schema.recordTypes.find((type) => type.name === query.recordType)?.fields ?? []).slice(0, 4).map((field) => field.name);
  const status = el("p", { class: "muted", id: "results-status" });
  const more = el("button", { type: "button", class: "plain", id: "more-results", hidden: true }, "More");
  let marker = null;
  let shown = 0;
  async function load() {
    try {
      const answer = await api(place, "records/query", { zoneID: zoneIDOf(place), query, resultsLimit: pageSize, ...(marker ? { continuationMarker: marker } : {}) });
      for (const record of answer.records) {
        if (record.serverErrorCode) continue;
        body.append(el("tr", {},
          el("td", {}, el("a", { href: pageLink("record", { ...place, name: record.recordName }), class: "record-link" }, record.recordName)),
          columns.map((name) => el("td", {}, record.fields?.[name] ? shownValue(place, record.fields[name]) : "")),
          el("td", { class: "muted" }, record.modified ? time(record.modified.timestamp) : "")));
        shown += 1;
      }
      marker = answer.continuationMarker ?? null;
      more.hidden = marker === null;
      status.textContent = `${shown} record${shown === 1 ? "" : "s"}${marker ? ", more to come" : ""}`;
    } catch (error) {
      status.replaceWith(problem(error.message));
    }
  }
  more.addEventListener("click", load);
  await load();
  return [el("h2", {}, `${query.recordType} records`), status,
    table("results", ["Record", ...columns, "Modified"], body),
    more];
}

/** For operators: the records as they were after a past commit (a sequence, or the last
 * commit at or before a time), made ready by the server from its checkpoints and a
 * replay, and the way back to now. Shown while the page is in the past, or as a form. */
async function asOfControl(place, page, parameters) {
  if (!state.session.operator) return [];
  const here = Object.fromEntries(parameters);
  if (place.asOf) {
    const past = await call("GET", `/console/api/as-of?${new URLSearchParams({ point: place.asOf })}`);
    const when = past.time === undefined ? "before the first commit" : `made ${time(past.time)}`;
    return [el("div", { class: "past", id: "as-of" },
      `As of commit #${past.sequence} (${when}; now at #${past.head}): read only. `,
      el("a", { href: pageLink(page, { ...here, asOf: "" }), id: "back-to-now" }, "Back to now"))];
  }
  const point = el("input", { id: "as-of-point", name: "point", placeholder: "a commit number, or a time (2026-11-29T06:00:00Z)", required: true });
  const status = el("span", { class: "muted", id: "as-of-status" });
  const form = el("form", { id: "as-of-form", class: "filters" },
    el("label", {}, "As of", point), el("button", { type: "submit", class: "plain" }, "Show as of"), status);
  const work = el("div", { id: "as-of-work" });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.className = "muted";
    status.textContent = "";
    try {
      // Replaying to the point is a job: its progress shows, and it can be cancelled.
      const job = await runJob({ kind: "as-of", point: point.value }, work);
      if (job.state === "done") location.hash = pageLink(page, { ...here, asOf: String(job.result.sequence) });
    } catch (error) {
      status.className = "error";
      status.textContent = error.message;
    }
  });
  return [form, work];
}

/** The records page: where, the zones, the query builder and its results. */
export async function recordsPage() {
  const parameters = fragmentParameters();
  const place = placeOf(parameters);
  const heading = el("h1", {}, "Records");
  const containers = await call("GET", "/console/api/containers");
  if (!place.container && containers.length > 0) place.container = containers[0].name;
  if (!place.container) {
    return [heading, el("p", { class: "muted" }, "No container yet: mint an API token for one (cumulus tokens create --container NAME).")];
  }
  const parts = [heading, ...await asOfControl(place, "records", parameters), placeChooser(place, containers)];
  if (place.database !== "public") parts.push(...await zonesSection(place));
  if (place.database === "private" && !place.asOf) parts.push(...await sharesSection(place));
  if (!place.asOf) parts.push(...await subscriptionsSection(place));
  const schema = await call("GET", `/console/api/schema?${new URLSearchParams({ container: place.container, environment: place.environment })}`);
  parts.push(el("h2", {}, "Query"), queryBuilder(place, schema, parameters));
  if (parameters.get("type")) parts.push(...await results(place, parameters, schema));
  return parts;
}

/** One record: its fields, its references and referrers, editing and deleting. A new
 * record (`create=1`) opens as an empty editor. */
export async function recordPage() {
  const parameters = fragmentParameters();
  const place = placeOf(parameters);
  const back = el("p", {}, el("a", { href: pageLink("records", { ...place, type: parameters.get("type") ?? "" }) }, "← Records"));
  if (parameters.get("create")) {
    return [back, el("h1", {}, "New record"), editor(place, { recordType: parameters.get("type") ?? "", fields: {} }, true)];
  }
  const name = parameters.get("name") ?? "";
  const answer = await api(place, "records/lookup", { zoneID: zoneIDOf(place), records: [{ recordName: name }] });
  const record = answer.records[0];
  if (!record || record.serverErrorCode) {
    return [back, el("h1", {}, name), problem(record?.reason ?? "no such record", "record-error")];
  }
  const referrers = await call("GET", `/console/api/records/referrers?${placeQuery(place, name)}`);
  const fields = Object.entries(record.fields ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const actions = el("div", { class: "buttons", id: "record-actions" });
  const work = el("div", { id: "record-work" });
  if (!state.session.actingAs && !place.asOf) {
    actions.append(
      el("button", { type: "button", id: "edit-record", onclick: () => work.replaceChildren(editor(place, record, false)) }, "Edit"),
      el("button", { type: "button", class: "danger", id: "delete-record", onclick: () => showDeletion(place, record, work) }, "Delete…"));
  }
  if (state.session.operator) {
    actions.append(el("a", { class: "button plain", id: "record-history", href: pageLink("history", { record: name, zone: place.zone }) }, "Timeline"));
  }
  return [
    back,
    ...await asOfControl(place, "record", parameters),
    el("h1", { id: "record-name" }, record.recordName),
    el("p", { class: "muted", id: "record-summary" },
      `${record.recordType} · tag ${record.recordChangeTag}`,
      record.created ? ` · created ${time(record.created.timestamp)} by ${record.created.userRecordName}` : "",
      record.modified ? ` · modified ${time(record.modified.timestamp)} by ${record.modified.userRecordName}` : ""),
    actions, work,
    el("h2", {}, "Fields"),
    fields.length === 0 ? el("p", { class: "muted" }, "No fields.")
      : table("record-fields", ["Field", "Type", "Value"], fields.map(([key, field]) =>
        el("tr", {}, el("td", {}, key), el("td", { class: "muted" }, field.type ?? ""), el("td", {}, shownValue(place, field))))),
    el("h2", {}, "Referred to by"),
    referrers.length === 0 ? el("p", { class: "muted", id: "no-referrers" }, "No record you can see refers to this one.")
      : el("ul", { id: "referrers" }, referrers.map((referrer) => el("li", {},
        el("a", { href: pageLink("record", { ...place, name: referrer.recordName }) }, referrer.recordName),
        referrer.action !== "NONE" ? ` (${referrer.action})` : ""))),
  ];
}

/** Asks what deleting `record` would take, says it, and deletes on a second click. */
async function showDeletion(place, record, work) {
  let preview;
  try {
    preview = await call("GET", `/console/api/records/deletion?${placeQuery(place, record.recordName)}`);
  } catch (error) {
    work.replaceChildren(problem(error.message));
    return;
  }
  if (preview.failure) {
    work.replaceChildren(problem(`This record cannot be deleted now: ${preview.failure.reason}`, "deletion-error"));
    return;
  }
  const others = preview.records.length - 1;
  work.replaceChildren(el("div", { class: "confirm", id: "deletion" },
    el("p", { id: "deletion-count" }, `Deleting ${record.recordName} deletes ${preview.records.length} record${preview.records.length === 1 ? "" : "s"}`,
      others > 0 ? ` (it and ${others} that a DELETE_SELF reference takes with it)` : "", "."),
    others > 0 ? el("ul", { id: "deletion-records" }, preview.records.slice(1, 51).map((victim) =>
      el("li", {}, `${victim.recordName} (${victim.recordType}), with ${victim.owner}`))) : "",
    el("button", { type: "button", class: "danger", id: "confirm-delete", onclick: async () => {
      try {
        const answer = await api(place, "records/modify", { zoneID: zoneIDOf(place), operations: [{ operationType: "delete", record: { recordName: record.recordName, recordChangeTag: record.recordChangeTag } }] });
        const failed = answer.records.find((item) => item.serverErrorCode);
        if (failed) throw new Error(failed.reason);
        location.hash = pageLink("records", { ...place, type: record.recordType });
      } catch (error) {
        work.append(problem(error.message, "deletion-error"));
      }
    } }, "Delete"),
    el("button", { type: "button", class: "plain", onclick: () => work.replaceChildren() }, "Cancel")));
}

/** The editor: a row per field (name, type, value); fields of other types are kept as
 * they are. Saving sends only what changed (`update`, with the tag read), or the
 * whole record (`create`). A conflict shows both sides to choose from. */
function editor(place, record, creating) {
  const rows = el("div", { id: "editor-fields", class: "rows" });
  const kept = [];
  const original = record.fields ?? {};
  function fieldRow(name = "", field = { type: "STRING", value: "" }) {
    const type = el("select", { class: "field-type" }, editableTypes.map((t) => el("option", { value: t, selected: t === field.type }, t)));
    const value = el("input", { class: "field-value", value: name ? editableText(field) : "", placeholder: "value" });
    const action = el("select", { class: "field-action", hidden: field.type !== "REFERENCE" },
      ["NONE", "DELETE_SELF", "VALIDATE"].map((a) => el("option", { value: a, selected: a === field.value?.action }, a)));
    type.addEventListener("change", () => { action.hidden = type.value !== "REFERENCE"; });
    const row = el("div", { class: "field-row", "data-original": name },
      el("input", { class: "field-name", value: name, placeholder: "field", required: true }), type, value, action,
      el("button", { type: "button", class: "plain", onclick: () => row.remove() }, "Remove"));
    return row;
  }
  for (const [name, field] of Object.entries(original)) {
    if (editableTypes.includes(field.type)) rows.append(fieldRow(name, field));
    else kept.push(el("li", {}, `${name} (${field.type}): kept as it is`));
  }
  const recordType = el("input", { id: "editor-type", value: record.recordType, required: true, readonly: !creating });
  const recordName = el("input", { id: "editor-name", value: record.recordName ?? "", placeholder: "(a new UUID)", readonly: !creating });
  const status = el("div", { id: "editor-status" });
  const form = el("form", { id: "editor", class: "editor" },
    el("div", { class: "filters" }, el("label", {}, "Record type", recordType), el("label", {}, "Record name", recordName)),
    rows, kept.length ? el("ul", { class: "muted" }, kept) : "",
    el("div", { class: "buttons" },
      el("button", { type: "button", class: "plain", id: "add-field", onclick: () => rows.append(fieldRow()) }, "+ Field"),
      el("button", { type: "submit", id: "save-record" }, creating ? "Create" : "Save")),
    status);

  /** The fields as edited: name → wire value, and whether each differs from the
   * stored value as the editor showed it (type, text and reference action). */
  function edited() {
    const fields = {};
    const differs = {};
    for (const row of rows.querySelectorAll(".field-row")) {
      const name = row.querySelector(".field-name").value.trim();
      if (!name) continue;
      const type = row.querySelector(".field-type").value;
      const text = row.querySelector(".field-value").value;
      const action = row.querySelector(".field-action").value;
      fields[name] = { type, value: wireValue(type, text, action) };
      const stored = original[name];
      differs[name] = !stored || stored.type !== type || editableText(stored) !== text
        || (type === "REFERENCE" && (stored.value.action ?? "NONE") !== action);
    }
    return { fields, differs };
  }
  /** What an update sends: changed and new fields, and removed ones as null. */
  function changes({ fields, differs }) {
    const changed = {};
    for (const [name, field] of Object.entries(fields)) if (differs[name]) changed[name] = field;
    for (const [name, field] of Object.entries(original)) {
      if (editableTypes.includes(field.type) && !(name in fields)) changed[name] = { type: field.type, value: null };
    }
    return changed;
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.replaceChildren();
    let fields;
    try {
      fields = edited();
    } catch (error) {
      status.replaceChildren(problem(error.message, "editor-error"));
      return;
    }
    const operation = creating
      ? { operationType: "create", record: { recordType: recordType.value, fields: fields.fields, ...(recordName.value ? { recordName: recordName.value } : {}) } }
      : { operationType: "update", record: { recordName: record.recordName, recordType: record.recordType, recordChangeTag: record.recordChangeTag, fields: changes(fields) } };
    try {
      const answer = await api(place, "records/modify", { zoneID: zoneIDOf(place), operations: [operation] });
      const item = answer.records[0];
      if (item.serverErrorCode === "CONFLICT" && item.serverRecord) {
        status.replaceChildren(conflict(place, record, changes(fields), item.serverRecord));
        return;
      }
      if (item.serverErrorCode) throw new Error(item.reason);
      const target = pageLink("record", { ...place, name: item.recordName });
      if (location.hash === target) window.dispatchEvent(new HashChangeEvent("hashchange"));
      else location.hash = target;
    } catch (error) {
      status.replaceChildren(problem(error.message, "editor-error"));
    }
  });
  return form;
}

/** A conflict side by side: each field this edit changed, yours beside the server's,
 * and which to keep. Saving writes the chosen values over the server's copy. */
function conflict(place, record, mine, server) {
  const names = Object.keys(mine).sort();
  const choices = {};
  const rows = names.map((name) => {
    const theirs = server.fields?.[name];
    const yours = mine[name];
    const pick = (side) => el("input", { type: "radio", name: `keep-${name}`, value: side, checked: side === "yours", class: `keep-${side}` });
    choices[name] = () => document.querySelector(`input[name="keep-${CSS.escape(name)}"]:checked`)?.value ?? "yours";
    return el("tr", { "data-field": name },
      el("td", {}, name),
      el("td", {}, el("label", { class: "choice" }, pick("yours"), yours.value === null ? "(removed)" : shownValue(place, yours))),
      el("td", {}, el("label", { class: "choice" }, pick("server"), theirs ? shownValue(place, theirs) : "(none)")));
  });
  const area = el("div", { class: "conflict", id: "conflict" },
    el("p", { class: "error" }, `${record.recordName} changed on the server (tag ${server.recordChangeTag}) since you opened it. Choose what to keep:`),
    table("conflict-fields", ["Field", "Yours", "The server's"], rows),
    el("button", { type: "button", id: "resolve-conflict", onclick: async () => {
      const fields = {};
      for (const name of names) if (choices[name]() === "yours") fields[name] = mine[name];
      try {
        const answer = await api(place, "records/modify", { zoneID: zoneIDOf(place), operations: [{ operationType: "update",
          record: { recordName: record.recordName, recordType: record.recordType, recordChangeTag: server.recordChangeTag, fields } }] });
        const item = answer.records[0];
        if (item.serverErrorCode) throw new Error(item.reason);
        window.dispatchEvent(new HashChangeEvent("hashchange"));
      } catch (error) {
        area.append(problem(error.message, "conflict-error"));
      }
    } }, "Save my choices"));
  return area;
}
