// The Node.js referee of internal/fakegce: Google's own clients (@google-cloud/compute over its REST transport,
// @google-cloud/dns) make and list things in the fake at FAKEGCE_ENDPOINT (http://127.0.0.1:PORT) and print what
// they were answered, as one JSON object on stdout, for nodejs_test.go to check.
'use strict';
const compute = require('@google-cloud/compute');
const {DNS} = require('@google-cloud/dns');
const {OAuth2Client} = require('google-auth-library');

const endpoint = new URL(process.env.FAKEGCE_ENDPOINT);
const project = 'referee';
const zone = 'us-central1-a';
const region = 'us-central1';

// A client with a token that never expires: the fake asks for no credentials, the libraries want some.
const authClient = new OAuth2Client();
authClient.setCredentials({access_token: 'fake', expiry_date: Date.now() + 3600e3});

const opts = {fallback: true, protocol: 'http', apiEndpoint: endpoint.hostname, port: Number(endpoint.port), authClient};

const zoneOps = new compute.ZoneOperationsClient(opts);
const regionOps = new compute.RegionOperationsClient(opts);
const globalOps = new compute.GlobalOperationsClient(opts);
const statuses = new Set();

// wait polls an insert's operation (its latestResponse) with zoneOperations, regionOperations or
// globalOperations.get until DONE, and fails on its error.
async function wait(lro) {
  let op = lro.latestResponse;
  for (let i = 0; i < 20; i++) {
    statuses.add(String(op.status));
    if (op.status === 'DONE') {
      if (op.error && op.error.errors && op.error.errors.length) {
        throw new Error(`operation ${op.name}: ${JSON.stringify(op.error)}`);
      }
      return op;
    }
    const last = s => s.slice(s.lastIndexOf('/') + 1);
    if (op.zone) {
      [op] = await zoneOps.get({project, zone: last(op.zone), operation: op.name});
    } else if (op.region) {
      [op] = await regionOps.get({project, region: last(op.region), operation: op.name});
    } else {
      [op] = await globalOps.get({project, operation: op.name});
    }
  }
  throw new Error(`operation ${op.name} never DONE`);
}

async function main() {
  const out = {};
  const disks = new compute.DisksClient(opts);
  const networks = new compute.NetworksClient(opts);
  const subnetworks = new compute.SubnetworksClient(opts);
  const templates = new compute.InstanceTemplatesClient(opts);
  const groups = new compute.InstanceGroupManagersClient(opts);
  const instances = new compute.InstancesClient(opts);

  for (const [name, role] of [['etcd-main-a', 'main'], ['etcd-events-a', 'events']]) {
    const [op] = await disks.insert({project, zone, requestId: `req-${name}`,
      diskResource: {name, sizeGb: 20, labels: {'kubeup-cluster': 'c1', role}}});
    await wait(op);
  }
  const [listed] = await disks.list({project, zone, filter: 'labels.kubeup-cluster=c1', maxResults: 1});
  out.disks = listed.map(d => ({name: d.name, sizeGb: String(d.sizeGb), labels: d.labels, selfLink: d.selfLink}));

  let [op] = await networks.insert({project, networkResource: {name: 'net', autoCreateSubnetworks: false}});
  await wait(op);
  [op] = await subnetworks.insert({project, region,
    subnetworkResource: {name: 'sub', network: `projects/${project}/global/networks/net`, ipCidrRange: '10.20.0.0/24'}});
  await wait(op);
  const [sub] = await subnetworks.get({project, region, subnetwork: 'sub'});
  out.subnetwork = {name: sub.name, ipCidrRange: sub.ipCidrRange, network: sub.network};

  [op] = await templates.insert({project, requestId: 'tmpl-1', instanceTemplateResource: {name: 'nodes-1', properties: {
    machineType: 'e2-medium', labels: {'kubeup-cluster': 'c1'}, tags: {items: ['nodes']}, canIpForward: true,
    metadata: {items: [{key: 'startup-script', value: '#!/bin/sh\necho referee\n'}]},
    disks: [{boot: true, autoDelete: true, initializeParams: {sourceImage: 'projects/debian-cloud/global/images/family/debian-12'}}],
    networkInterfaces: [{subnetwork: `regions/${region}/subnetworks/sub`, accessConfigs: [{type: 'ONE_TO_ONE_NAT', name: 'External NAT'}]}],
  }}});
  await wait(op);
  const [tmpls] = await templates.list({project});
  out.templates = tmpls.map(t => t.name);

  [op] = await groups.insert({project, zone, requestId: 'igm-1', instanceGroupManagerResource: {name: 'nodes',
    baseInstanceName: 'nodes', instanceTemplate: `global/instanceTemplates/nodes-1`, targetSize: 2}});
  await wait(op);
  const [group] = await groups.get({project, zone, instanceGroupManager: 'nodes'});
  out.group = {name: group.name, targetSize: Number(group.targetSize), instanceTemplate: group.instanceTemplate};
  const [ins] = await instances.list({project, zone});
  out.instances = ins.map(i => ({name: i.name, ip: i.networkInterfaces[0].networkIP,
    startupScript: (i.metadata.items.find(it => it.key === 'startup-script') || {}).value}));

  // A route to the first instance (kubenet's pod range), listed by its description, refused twice, deleted.
  const routes = new compute.RoutesClient(opts);
  const route = {name: 'pod-100-96-1-0-24-c1', network: `projects/${project}/global/networks/net`, destRange: '100.96.1.0/24',
    nextHopInstance: `zones/${zone}/instances/${ins[0].name}`, priority: 1000, description: 'kubeup: owned by cluster c1'};
  [op] = await routes.insert({project, routeResource: route});
  await wait(op);
  let dupRoute;
  try {
    await routes.insert({project, routeResource: route});
  } catch (e) {
    dupRoute = e;
  }
  out.duplicateRoute = dupRoute ? {message: dupRoute.message} : null;
  const [rl] = await routes.list({project, filter: 'description = "kubeup: owned by cluster c1"'});
  out.routes = rl.map(r => ({name: r.name, destRange: r.destRange, nextHopInstance: r.nextHopInstance,
    priority: Number(r.priority), warnings: (r.warnings || []).map(w => w.code)}));
  [op] = await routes.delete({project, route: route.name});
  await wait(op);
  let goneRoute;
  try {
    await routes.get({project, route: route.name});
  } catch (e) {
    goneRoute = e;
  }
  out.deletedRoute = goneRoute ? {message: goneRoute.message} : null;

  let err;
  try {
    await templates.delete({project, instanceTemplate: 'nodes-1'});
  } catch (e) {
    err = e;
  }
  out.templateInUse = err ? {code: err.code, message: err.message} : null;

  const dns = new DNS({projectId: project, authClient});
  dns.baseUrl = `${endpoint.origin}/dns/v1`;
  const [zoneObj] = await dns.createZone('example', {dnsName: 'example.com.'});
  await zoneObj.addRecords([
    zoneObj.record('a', {name: 'api.c1.example.com.', ttl: 60, data: '10.0.0.1'}),
    zoneObj.record('a', {name: 'etcd-a.c1.example.com.', ttl: 60, data: ['10.0.0.2']}),
  ]);
  const [zones] = await dns.getZones();
  out.zones = zones.map(z => ({name: z.name, dnsName: z.metadata.dnsName}));
  const [records] = await zoneObj.getRecords();
  out.records = records.map(r => `${r.name} ${r.type} ${r.data.join(',')}`).sort();
  let dup;
  try {
    await zoneObj.addRecords(zoneObj.record('a', {name: 'api.c1.example.com.', ttl: 60, data: '10.0.0.9'}));
  } catch (e) {
    dup = e;
  }
  out.duplicateRecord = dup ? {code: dup.code, message: dup.message} : null;
  out.operationStatuses = [...statuses].sort();
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch(e => {
  console.error(e && e.stack || e);
  process.exit(1);
});
