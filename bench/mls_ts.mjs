// ts-mls's side of bench/mls.py: the same groups and operations, timed inside Node.
//
//   node bench/mls_ts.mjs <directory whose node_modules holds ts-mls> '<config JSON>'
//
// config: {"suite": 1, "sizes": [2, 10], "runs": {"2": 20, "10": 20}, "messages": 1000, "payload_bytes": 100}
//
// Each group is built as bench/mls_engine.py builds it: alice creates it and
// adds every other member in one commit (no path), bob (leaf 1) joins from
// the Welcome, alice commits an empty commit with a path and bob processes
// it.  Then alice creates Add / Update / Remove commits and bob processes
// them (the fastest of `runs` each), and alice sends `messages` application
// messages that bob decrypts in order (the best of three rounds).  As on the Python side, creating
// includes encoding the MLSMessage (and the Welcome) and processing includes
// decoding it; handshakes are PrivateMessages, and Welcomes carry the
// ratchet_tree extension.
//
// Output, one JSON object per line: {"status": text} while working, then
// {"results": [per size: {members, build_seconds, operations, application}]}.

import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const installed = createRequire(join(process.argv[2], "package.json"));
const load = (specifier) => import(pathToFileURL(installed.resolve(specifier)).href);
const mls = await load("ts-mls");
const config = JSON.parse(process.argv[3]);

const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const status = (text) => say({ status: text });
const seconds = (start) => (performance.now() - start) / 1000;

const name = Object.keys(mls.ciphersuites).find((key) => mls.ciphersuites[key] === config.suite);
const impl = await mls.getCiphersuiteImpl(mls.getCiphersuiteFromName(name));

// defaultCapabilities() adds random GREASE values; the same lists without them.
const capabilities = {
  versions: ["mls10"],
  ciphersuites: Object.keys(mls.ciphersuites),
  extensions: [],
  proposals: [],
  credentials: ["basic", "x509"],
};

const keyPackage = (identity) =>
  mls.generateKeyPackage(
    { credentialType: "basic", identity: new TextEncoder().encode(identity) },
    capabilities,
    mls.defaultLifetime,
    [],
    impl,
  );

const addOf = (made) => ({ proposalType: "add", add: { keyPackage: made.publicPackage } });
const removedLeaf = (members) => (members > 2 ? Math.floor(members / 2) : 1);

async function createCommit(state, proposals) {
  const result = await mls.createCommit(
    { state, cipherSuite: impl },
    { extraProposals: proposals, ratchetTreeExtension: true, wireAsPublicMessage: false },
  );
  const commit = mls.encodeMlsMessage(result.commit);
  const welcome =
    result.welcome === undefined
      ? undefined
      : mls.encodeMlsMessage({ version: "mls10", wireformat: "mls_welcome", welcome: result.welcome });
  return { newState: result.newState, commit, welcome };
}

async function processBytes(state, bytes) {
  const [message] = mls.decodeMlsMessage(bytes, 0);
  return (await mls.processMessage(message, state, mls.emptyPskIndex, mls.acceptAll, impl)).newState;
}

const sameEpoch = (a, b) =>
  Buffer.from(a.keySchedule.epochAuthenticator).equals(Buffer.from(b.keySchedule.epochAuthenticator));

// The fastest of `runs` runs of the same work: slower ones only measure whatever else shares the cores.
async function best(runs, fn) {
  let fastest = Infinity;
  let result;
  for (let run = 0; run < runs; run += 1) {
    const start = performance.now();
    result = await fn();
    fastest = Math.min(fastest, seconds(start));
  }
  return [fastest, result];
}

async function buildGroup(members) {
  const build_seconds = {};
  let start = performance.now();
  status(`ts-mls ${members}-member group: key packages`);
  const packages = [];
  for (let index = 1; index < members; index += 1) packages.push(await keyPackage(`member-${index}`));
  build_seconds["key packages"] = seconds(start);
  const creator = await keyPackage("alice");
  let alice = await mls.createGroup(
    new TextEncoder().encode("tessera-bench-mls"),
    creator.publicPackage,
    creator.privatePackage,
    [],
    impl,
  );
  status(`ts-mls ${members}-member group: one commit adding ${members - 1} members`);
  start = performance.now();
  const adding = await createCommit(alice, packages.map(addOf));
  build_seconds["adding commit"] = seconds(start);
  status(`ts-mls ${members}-member group: bob joins from the Welcome`);
  start = performance.now();
  const [welcome] = mls.decodeMlsMessage(adding.welcome, 0);
  let bob = await mls.joinGroup(
    welcome.welcome,
    packages[0].publicPackage,
    packages[0].privatePackage,
    mls.emptyPskIndex,
    impl,
  );
  build_seconds["bob joins"] = seconds(start);
  status(`ts-mls ${members}-member group: alice's first path`);
  start = performance.now();
  const path = await createCommit(adding.newState, []);
  build_seconds["alice's first path"] = seconds(start);
  alice = path.newState;
  bob = await processBytes(bob, path.commit);
  if (!sameEpoch(alice, bob)) throw new Error("bob and alice disagree after alice's first path");
  return { alice, bob, build_seconds };
}

async function measureOperation(group, members, operation, runs) {
  const proposals =
    operation === "add"
      ? [addOf(await keyPackage("newcomer"))]
      : operation === "update"
        ? []
        : [{ proposalType: "remove", remove: { removed: removedLeaf(members) } }];
  const [create_s, made] = await best(runs, () => createCommit(group.alice, proposals));
  let process_s = null;
  if (!(operation === "remove" && removedLeaf(members) === 1)) {
    const [taken, bob] = await best(runs, () => processBytes(group.bob, made.commit));
    if (!sameEpoch(made.newState, bob)) throw new Error(`bob and alice disagree after the ${operation}`);
    process_s = taken;
  }
  return {
    operation,
    runs,
    create_s,
    process_s,
    commit_bytes: made.commit.length,
    welcome_bytes: made.welcome?.length ?? 0,
  };
}

async function encryptAll(sender, messages, payload) {
  const sent = [];
  let state = sender;
  for (let index = 0; index < messages; index += 1) {
    const made = await mls.createApplicationMessage(state, payload, impl);
    state = made.newState;
    sent.push(
      mls.encodeMlsMessage({ version: "mls10", wireformat: "mls_private_message", privateMessage: made.privateMessage }),
    );
  }
  return sent;
}

async function decryptAll(receiver, sent, payloadBytes) {
  let state = receiver;
  for (const bytes of sent) {
    const [message] = mls.decodeMlsMessage(bytes, 0);
    const result = await mls.processMessage(message, state, mls.emptyPskIndex, mls.acceptAll, impl);
    if (result.kind !== "applicationMessage" || result.message.length !== payloadBytes) {
      throw new Error("an application message did not come back");
    }
    state = result.newState;
  }
}

async function measureApplication(group, messages, payloadBytes, rounds = 3) {
  const payload = new Uint8Array(payloadBytes).fill(0x61);
  let encrypt_per_s = 0;
  let decrypt_per_s = 0;
  for (let round = 0; round < rounds; round += 1) {
    let start = performance.now();
    const sent = await encryptAll(group.alice, messages, payload);
    encrypt_per_s = Math.max(encrypt_per_s, messages / seconds(start));
    start = performance.now();
    await decryptAll(group.bob, sent, payloadBytes);
    decrypt_per_s = Math.max(decrypt_per_s, messages / seconds(start));
  }
  return { messages, encrypt_per_s, decrypt_per_s };
}

const results = [];
for (const members of config.sizes) {
  const group = await buildGroup(members);
  const runs = config.runs[String(members)];
  const operations = [];
  for (const operation of ["add", "update", "remove"]) {
    status(`ts-mls ${members}-member group: ${operation} commits`);
    operations.push(await measureOperation(group, members, operation, runs));
  }
  status(`ts-mls ${members}-member group: application messages`);
  const application = await measureApplication(group, config.messages, config.payload_bytes);
  results.push({ members, build_seconds: group.build_seconds, operations, application });
}
say({ results });
