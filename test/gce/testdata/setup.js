// The user's side of the gce acceptance, made by Google's own Node.js clients (as a user's tooling would): the
// network, its subnetwork in us-central1 and the managed zone example.com, in project p of the fake at
// FAKEGCE_ENDPOINT. It prints nothing and exits 0 when done.
'use strict';
const compute = require('@google-cloud/compute');
const {DNS} = require('@google-cloud/dns');
const {OAuth2Client} = require('google-auth-library');

const endpoint = new URL(process.env.FAKEGCE_ENDPOINT);
const [project, region, network, subnetwork] = process.argv.slice(2);

const authClient = new OAuth2Client();
authClient.setCredentials({access_token: 'fake', expiry_date: Date.now() + 3600e3});
const opts = {fallback: true, protocol: 'http', apiEndpoint: endpoint.hostname, port: Number(endpoint.port), authClient};

// done polls an operation until DONE (the fake makes the change at once; its operation takes two polls).
async function done(op, get) {
  for (let i = 0; i < 20 && op.status !== 'DONE'; i++) {
    [op] = await get(op.name);
  }
  if (op.status !== 'DONE' || (op.error && op.error.errors && op.error.errors.length)) {
    throw new Error(`operation ${op.name}: ${op.status} ${JSON.stringify(op.error || {})}`);
  }
}

async function main() {
  const globalOps = new compute.GlobalOperationsClient(opts);
  const regionOps = new compute.RegionOperationsClient(opts);
  let [lro] = await new compute.NetworksClient(opts).insert({project, networkResource: {name: network, autoCreateSubnetworks: false}});
  await done(lro.latestResponse, operation => globalOps.get({project, operation}));
  [lro] = await new compute.SubnetworksClient(opts).insert({project, region, subnetworkResource: {
    name: subnetwork, network: `projects/${project}/global/networks/${network}`, ipCidrRange: '10.1.0.0/16'}});
  await done(lro.latestResponse, operation => regionOps.get({project, region, operation}));
  const dns = new DNS({projectId: project, authClient});
  dns.baseUrl = `${endpoint.origin}/dns/v1`;
  await dns.createZone('example-com', {dnsName: 'example.com.', description: 'the acceptance zone'});
}

main().catch(e => {
  console.error(e && e.stack || e);
  process.exit(1);
});
