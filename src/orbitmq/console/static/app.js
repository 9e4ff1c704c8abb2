// orbitmq console: plain JavaScript, no libraries. The lag/TPS chart is an SVG drawn here.
"use strict";

const POLL_MS = 1000;
const HISTORY = 120;
let currentGroup = null;
let groupTimer = null;
let history = [];

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, options);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  $("#status").textContent = "";
  return data;
}

function post(path, body) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
}

function showError(err) { $("#status").textContent = err.message; }

function fillTable(table, rows) {
  const body = table.querySelector("tbody");
  body.replaceChildren(...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c ?? "")))));
}

function result(node, text, ok = true) {
  node.textContent = text;
  node.className = ok ? "result" : "result error";
}

// ---------------------------------------------------------------------------------------- pages
let clusterHistory = [];

async function showCluster() {
  const data = await api("/api/cluster");
  const sum = (key) => data.brokers.reduce((total, b) => total + Number(b[key] || 0), 0);
  clusterHistory.push({ t: Date.now(), put: sum("sendTps"), get: sum("consumeTps") });
  if (clusterHistory.length > HISTORY) clusterHistory.shift();
  drawTwo($("#tps-chart"), clusterHistory,
    { key: "put", cls: "put", label: (m) => `put ${m.toFixed(1)} msg/s` },
    { key: "get", cls: "tps", label: (m) => `get ${m.toFixed(1)} msg/s` });
  fillTable($("#brokers"), data.brokers.map((b) => [
    b.cluster, b.brokerName, b.brokerId, b.address, b.brokerVersionDesc, b.brokerRole,
    b.sendTps, b.consumeTps, b.msgPutTotalTodayNow, b.msgGetTotalTodayNow,
    b.commitLogDiskRatio !== undefined ? (100 * Number(b.commitLogDiskRatio)).toFixed(1) + "%" : b.error,
  ]));
}

async function showTopics() {
  const data = await api("/api/topics");
  const filter = $("#topic-filter").value.trim();
  const list = $("#topic-list");
  list.replaceChildren(...data.topics.filter((t) => t.includes(filter)).map((t) => {
    const item = el("li", { "data-topic": t }, t);
    item.onclick = () => showTopic(t).catch(showError);
    return item;
  }));
}

async function showTopic(topic) {
  const data = await api("/api/topics/" + encodeURIComponent(topic));
  const routes = el("table", {}, el("tr", {}, ...["broker", "read", "write", "perm"].map((h) => el("th", {}, h))),
    ...data.routes.map((r) => el("tr", {}, ...[r.brokerName, r.readQueueNums, r.writeQueueNums, r.perm].map((c) => el("td", {}, c)))));
  const queues = el("table", {}, el("tr", {}, ...["broker", "queue", "min", "max", "last update"].map((h) => el("th", {}, h))),
    ...data.queues.map((q) => el("tr", {}, ...[q.brokerName, q.queueId, q.minOffset, q.maxOffset,
      q.lastUpdateTimestamp ? new Date(q.lastUpdateTimestamp).toISOString() : "-"].map((c) => el("td", {}, c)))));
  $("#topic-detail").replaceChildren(el("h3", {}, topic), el("h4", {}, "Routes"), routes, el("h4", {}, "Queues"), queues);
}

async function showGroups() {
  const data = await api("/api/groups");
  $("#group-list").replaceChildren(...data.groups.map((g) => {
    const item = el("li", { "data-group": g }, g);
    item.onclick = () => selectGroup(g);
    return item;
  }));
}

function selectGroup(group) {
  currentGroup = group;
  history = [];
  $("#group-title").textContent = group;
  for (const li of document.querySelectorAll("#group-list li")) li.classList.toggle("selected", li.dataset.group === group);
  clearInterval(groupTimer);
  pollGroup();
  groupTimer = setInterval(pollGroup, POLL_MS);
}

async function pollGroup() {
  if (!currentGroup || location.hash !== "#groups") return;
  try {
    const data = await api("/api/groups/" + encodeURIComponent(currentGroup));
    history.push({ t: data.time, lag: data.diffTotal, tps: data.consumeTps });
    if (history.length > HISTORY) history.shift();
    $("#lag-now").textContent = `lag ${data.diffTotal} · ${data.consumeTps.toFixed(1)} msg/s`;
    $("#lag-now").dataset.lag = data.diffTotal;
    $("#group-members").textContent = data.members.length ? "members: " + data.members.join(", ") : (data.note || "no online members");
    fillTable($("#group-queues"), data.queues.map((q) => [q.topic, q.brokerName, q.queueId, q.brokerOffset, q.consumerOffset, q.diff]));
    drawChart();
  } catch (err) { showError(err); }
}

function polyline(values, max, cls) {
  const line = svgNode("polyline", {});
  // The points spread over the whole width (a new chart is not a sliver at the right edge).
  const step = 600 / Math.max(values.length - 1, 1);
  line.setAttribute("points", values.map((v, i) => `${(i * step).toFixed(1)},${(195 - 170 * v / max).toFixed(1)}`).join(" "));
  line.setAttribute("class", cls);
  return line;
}

function svgNode(tag, attrs, text) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// Two series on one SVG, each scaled to its own maximum (left label: first, right label: second).
function drawTwo(chart, points, first, second) {
  const a = points.map((p) => p[first.key]);
  const b = points.map((p) => p[second.key]);
  const aMax = Math.max(1, ...a);
  const bMax = Math.max(1, ...b);
  const grid = [0.25, 0.5, 0.75, 1].map((f) => svgNode("line", { x1: 0, x2: 600, y1: 195 - 170 * f, y2: 195 - 170 * f, class: "grid" }));
  const seconds = points.length > 1 ? Math.round((points[points.length - 1].t - points[0].t) / 1000) : 0;
  chart.replaceChildren(
    ...grid,
    polyline(a, aMax, first.cls),
    polyline(b, bMax, second.cls),
    svgNode("text", { x: 4, y: 14, class: first.cls + "-label" }, first.label(aMax)),
    svgNode("text", { x: 596, y: 14, class: second.cls + "-label", "text-anchor": "end" }, second.label(bMax)),
    svgNode("text", { x: 596, y: 192, class: "axis-label", "text-anchor": "end" }, `last ${seconds} s`),
  );
  chart.dataset.points = String(points.length);
  chart.dataset.last = String(a.length ? a[a.length - 1] : 0);
}

function drawChart() {
  drawTwo($("#lag-chart"), history,
    { key: "lag", cls: "lag", label: (m) => `${m} msgs` },
    { key: "tps", cls: "tps", label: (m) => `${m.toFixed(1)} msg/s` });
}

function messageCard(m) {
  const props = el("table", {}, ...Object.entries(m.properties).map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v))));
  return el("div", { class: "message" },
    el("p", {}, el("b", {}, m.msgId), ` ${m.topic} · queue ${m.queueId} · offset ${m.queueOffset} · `,
      new Date(m.storeTimestamp).toISOString()),
    el("p", {}, `keys: ${m.keys ?? ""} · tags: ${m.tags ?? ""} · ${m.bodyLength} bytes`),
    el("pre", { class: "msg-body" }, m.body), props);
}

// ---------------------------------------------------------------------------------------- forms
function formObject(form) { return Object.fromEntries(new FormData(form).entries()); }

$("#create-topic").onsubmit = async (event) => {
  event.preventDefault();
  try {
    const data = await post("/api/topics", formObject(event.target));
    result($("#create-result"), `saved ${data.topic} on ${data.brokers.join(", ")}`);
    await showTopics();
  } catch (err) { result($("#create-result"), err.message, false); }
};

$("#reset-offset").onsubmit = async (event) => {
  event.preventDefault();
  const form = formObject(event.target);
  const when = form.time ? new Date(form.time).getTime() : Date.now();
  try {
    const data = await post(`/api/groups/${encodeURIComponent(currentGroup)}/reset`, { topic: form.topic, timestamp: when });
    result($("#reset-result"), data.offsets.map((o) => `${o.brokerName}/${o.queueId} -> ${o.offset}`).join(", ") || "nothing to reset");
  } catch (err) { result($("#reset-result"), err.message, false); }
};

$("#find-message").onsubmit = async (event) => {
  event.preventDefault();
  const query = new URLSearchParams(Object.entries(formObject(event.target)).filter(([, v]) => v !== ""));
  try {
    const data = await api("/api/messages?" + query);
    $("#message-results").replaceChildren(...(data.messages.length ? data.messages.map(messageCard) : [el("p", {}, "no message")]));
  } catch (err) { $("#message-results").replaceChildren(el("p", { class: "result error" }, err.message)); }
};

$("#send-message").onsubmit = async (event) => {
  event.preventDefault();
  try {
    const data = await post("/api/messages", formObject(event.target));
    result($("#send-result"), `${data.status} ${data.msgId} -> ${data.brokerName}/${data.queueId}@${data.queueOffset}`);
  } catch (err) { result($("#send-result"), err.message, false); }
};

$("#topic-filter").oninput = () => showTopics().catch(showError);

// ---------------------------------------------------------------------------------------- routing
const PAGES = { cluster: showCluster, topics: showTopics, groups: showGroups, messages: async () => {} };

function route() {
  const page = (location.hash || "#cluster").slice(1);
  for (const section of document.querySelectorAll(".page")) section.classList.toggle("active", section.id === "page-" + page);
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.page === page);
  (PAGES[page] || showCluster)().catch(showError);
}

window.addEventListener("hashchange", route);
setInterval(() => { if ((location.hash || "#cluster") === "#cluster") showCluster().catch(showError); }, 2000);
route();
