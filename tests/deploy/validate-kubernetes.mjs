// Validates every document of the given manifest files offline against the Kubernetes API
// schemas (kubernetes-models) and, for ServiceMonitor and PrometheusRule, the Prometheus
// Operator's CRD schemas (@kubernetes-models/prometheus-operator). Then checks that the
// validation can fail: each mutation below must be refused. Run by validate-kubernetes.sh.
//
//   node validate-kubernetes.mjs FILE...
import fs from "node:fs";
import yaml from "js-yaml";

async function modelFor(doc) {
  const [group, version] = doc.apiVersion.includes("/")
    ? doc.apiVersion.split("/")
    : ["", doc.apiVersion];
  const module =
    group === "monitoring.coreos.com"
      ? `@kubernetes-models/prometheus-operator/${group}/${version}/${doc.kind}`
      : `kubernetes-models/${group ? `${group}/` : ""}${version}/${doc.kind}`;
  const imported = await import(module);
  return imported[doc.kind];
}

// The error of validating DOC, or null when valid.
async function problem(doc) {
  try {
    const Model = await modelFor(doc);
    new Model(doc).validate();
    return null;
  } catch (e) {
    return String(e.message || e).split("\n").slice(0, 3).join(" ");
  }
}

const clone = (o) => JSON.parse(JSON.stringify(o));
// Each breaks one document of its kind in a way the schemas must refuse.
const mutations = {
  DaemonSet: [
    ["a port number as text", (d) => { d.spec.template.spec.containers[0].ports[0].containerPort = "metrics"; }],
    ["hostPID as text", (d) => { d.spec.template.spec.hostPID = "yes"; }],
    ["no containers", (d) => { delete d.spec.template.spec.containers; }],
  ],
  Service: [["a port as text", (d) => { d.spec.ports[0].port = "http"; }]],
  ServiceMonitor: [["honorLabels as text", (d) => { d.spec.endpoints[0].honorLabels = "true"; }]],
  PrometheusRule: [["a rule group without rules' list", (d) => { d.spec.groups[0].rules = "none"; }]],
};

let failures = 0;
const counts = {};
for (const file of process.argv.slice(2)) {
  const docs = yaml.loadAll(fs.readFileSync(file, "utf8")).filter((d) => d);
  for (const doc of docs) {
    const what = `${file}: ${doc.kind} ${doc.metadata?.namespace ?? ""}/${doc.metadata?.name}`;
    const err = await problem(doc);
    if (err) {
      console.log(`FAIL ${what}: ${err}`);
      failures++;
      continue;
    }
    counts[doc.kind] = (counts[doc.kind] ?? 0) + 1;
    for (const [name, mutate] of mutations[doc.kind] ?? []) {
      const broken = clone(doc);
      mutate(broken);
      if (!(await problem(broken))) {
        console.log(`FAIL ${what}: the schema accepts ${name}`);
        failures++;
      }
    }
  }
}
const summary = Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ");
console.log(`${failures ? "FAILED" : "valid"}: ${summary} (kubernetes-models, ` +
  `@kubernetes-models/prometheus-operator)`);
process.exit(failures ? 1 : 0);
