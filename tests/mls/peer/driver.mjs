// A ts-mls peer for Tessera's MLS interop tests, driven over stdin/stdout.
//
//   node driver.mjs <directory whose node_modules holds ts-mls>
//
// One JSON request per line: {"id": .., "op": "..", "args": {..}}; one JSON
// response per line, in order: {"id": .., "ok": true, "result": {..}} or
// {"id": .., "ok": false, "error": ".."}.  Bytes are hex both ways.  Every
// message (key package, welcome, group info, commit, application message)
// travels as an encoded MLSMessage.  Groups and key packages stay in memory,
// named by the handles the operations return.
//
// Operations, arguments -> result fields ([optional]):
//   create_key_package   identity, suite [, native_signature_key] -> handle, key_package, init_private_key
//   create_group         identity, group_id, suite -> handle
//   add_members          handle, key_packages [, public, ratchet_tree_extension] -> commit, welcome, group_info
//   remove_members       handle, leaf_indexes [, public] -> commit
//   update               handle [, public] -> commit (with an UpdatePath)
//   propose              handle, add (a key package) or remove (a leaf index) [, public] -> message
//   commit               handle [, public] -> commit [, welcome] (every pending proposal, by reference)
//   group_info           handle [, rfc_external_pub] -> group_info (with external_pub and ratchet_tree)
//   join_from_welcome    key_package (a handle), welcome [, ratchet_tree] -> handle
//   join_external        group_info, identity -> handle, commit (an external commit)
//   process_message      handle, message -> kind, epoch [, plaintext]
//   encrypt_application  handle, plaintext -> message
//   export_secret        handle, label (text), context, length -> secret
//   epoch_authenticator  handle -> epoch_authenticator
//   epoch                handle -> epoch
//   active               handle -> active (false once a commit removed this member)
//   ratchet_tree         handle -> ratchet_tree
//   members              handle -> members [{leaf_index, identity, signature_key, encryption_key}]

import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

// ts-mls lives in a cache directory, not next to this script, so resolve it
// from there; its own imports then find their dependencies beside it.
const installed = createRequire(join(process.argv[2], "package.json"));
const load = (specifier) => import(pathToFileURL(installed.resolve(specifier)).href);
const mls = await load("ts-mls");
const { decodeRatchetTree, encodeRatchetTree } = await load("ts-mls/ratchetTree.js");
const { createGroupInfoWithRatchetTree } = await load("ts-mls/createCommit.js");
const { encode } = await load("ts-mls/codec/tlsEncoder.js");
const { varLenDataEncoder } = await load("ts-mls/codec/variableLength.js");
const { p256, p384, p521 } = await load("@noble/curves/nist.js");

const HEX = /^(?:[0-9a-f]{2})*$/i;

function fromHex(text, name) {
  if (typeof text !== "string" || !HEX.test(text)) throw new Error(`${name} must be a hex string`);
  return new Uint8Array(Buffer.from(text, "hex"));
}

const toHex = (bytes) => Buffer.from(bytes).toString("hex");

// --- cipher suites and capabilities ----------------------------------------

const suiteImpls = new Map();

async function suiteImpl(id) {
  if (!suiteImpls.has(id)) {
    const name = Object.keys(mls.ciphersuites).find((key) => mls.ciphersuites[key] === id);
    if (name === undefined) throw new Error(`ts-mls has no cipher suite ${id}`);
    suiteImpls.set(id, await mls.getCiphersuiteImpl(mls.getCiphersuiteFromName(name)));
  }
  return suiteImpls.get(id);
}

// defaultCapabilities() adds random GREASE values; these are the same lists
// without them, so two runs advertise the same capabilities.
const capabilities = () => ({
  versions: ["mls10"],
  ciphersuites: Object.keys(mls.ciphersuites),
  extensions: [],
  proposals: [],
  credentials: ["basic", "x509"],
});

// ts-mls 1.6.4 publishes NIST-curve signature keys compressed (noble's
// default), but RFC 9420 section 5.1.1 wants the uncompressed point, and
// strict receivers refuse the other form.  Keys are re-encoded uncompressed
// unless the caller asks for ts-mls's own form (native_signature_key).
const NIST_CURVES = new Map([
  [2, p256],
  [5, p521],
  [7, p384],
]);

async function signatureKeyPair(suite, impl, native) {
  const pair = await impl.signature.keygen();
  const curve = NIST_CURVES.get(suite);
  if (curve === undefined || native) return pair;
  return { signKey: pair.signKey, publicKey: curve.Point.fromBytes(pair.publicKey).toBytes(false) };
}

async function newKeyPackage(identity, suite, native = false) {
  const impl = await suiteImpl(suite);
  const credential = { credentialType: "basic", identity: fromHex(identity, "identity") };
  const keyPair = await signatureKeyPair(suite, impl, native);
  const made = await mls.generateKeyPackageWithKey(credential, capabilities(), mls.defaultLifetime, [], keyPair, impl);
  return { ...made, impl };
}

// --- handles ---------------------------------------------------------------

const objects = new Map();
let handleCount = 0;

function keep(kind, value) {
  handleCount += 1;
  const handle = `${kind}-${handleCount}`;
  objects.set(handle, { kind, ...value });
  return handle;
}

function lookup(handle, kind) {
  const found = objects.get(handle);
  if (found === undefined || found.kind !== kind) throw new Error(`no ${kind} with handle ${handle}`);
  return found;
}

// --- MLSMessage framing ----------------------------------------------------

const encodeMessage = (wireformat, field, value) =>
  toHex(mls.encodeMlsMessage({ version: "mls10", wireformat, [field]: value }));

function decodeMessage(hex, name) {
  const decoded = mls.decodeMlsMessage(fromHex(hex, name), 0);
  if (decoded === undefined) throw new Error(`${name} is not an MLSMessage`);
  return decoded[0];
}

function decodeKeyPackage(hex) {
  const message = decodeMessage(hex, "key package");
  if (message.wireformat !== "mls_key_package") throw new Error(`expected a key package, got ${message.wireformat}`);
  return message.keyPackage;
}

// --- group operations ------------------------------------------------------

// Handshakes go out as PublicMessages unless asked otherwise, so the tests can
// read their content; public: false sends them encrypted.  A commit also
// carries every pending proposal by reference (ts-mls adds them itself).
async function commit(group, proposals, sendPublic = true, treeInWelcome = true) {
  const result = await mls.createCommit(
    { state: group.state, cipherSuite: group.impl },
    { extraProposals: proposals, ratchetTreeExtension: treeInWelcome, wireAsPublicMessage: sendPublic },
  );
  group.state = result.newState;
  return result;
}

// The current epoch's GroupInfo with external_pub and ratchet_tree: what a
// member publishes for external joiners.  ts-mls 1.6.4 writes external_pub
// as the bare key; RFC 9420 section 12.4.3.2 wraps it in a length prefix
// (struct ExternalPub), which rfcExternalPub asks for.  Both are signed by
// ts-mls, so the rewrapped GroupInfo is still genuinely its own.
async function groupInfo(group, rfcExternalPub = false) {
  const { state, impl } = group;
  let info;
  if (rfcExternalPub) {
    const external = await impl.hpke.deriveKeyPair(state.keySchedule.externalSecret);
    const key = await impl.hpke.exportPublicKey(external.publicKey);
    const extension = { extensionType: "external_pub", extensionData: encode(varLenDataEncoder)(key) };
    info = await createGroupInfoWithRatchetTree(
      state.groupContext,
      state.confirmationTag,
      state,
      state.ratchetTree,
      [extension],
      impl,
    );
  } else {
    info = await mls.createGroupInfoWithExternalPubAndRatchetTree(state, [], impl);
  }
  return encodeMessage("mls_group_info", "groupInfo", info);
}

const encodeWelcome = (welcome) =>
  welcome === undefined ? {} : { welcome: encodeMessage("mls_welcome", "welcome", welcome) };

const contentTypeOf = (message) =>
  message.wireformat === "mls_public_message"
    ? message.publicMessage.content.contentType
    : message.privateMessage.contentType;

const operations = {
  async create_key_package({ identity, suite, native_signature_key }) {
    const { publicPackage, privatePackage, impl } = await newKeyPackage(identity, suite, native_signature_key);
    return {
      handle: keep("key_package", { publicPackage, privatePackage, impl }),
      key_package: encodeMessage("mls_key_package", "keyPackage", publicPackage),
      // Lets a test open the Welcome for this key package with its own HPKE.
      init_private_key: toHex(privatePackage.initPrivateKey),
    };
  },

  async create_group({ identity, group_id, suite }) {
    const { publicPackage, privatePackage, impl } = await newKeyPackage(identity, suite);
    const state = await mls.createGroup(fromHex(group_id, "group_id"), publicPackage, privatePackage, [], impl);
    return { handle: keep("group", { state, impl }) };
  },

  async add_members({ handle, key_packages, public: sendPublic, ratchet_tree_extension = true }) {
    const group = lookup(handle, "group");
    const proposals = key_packages.map((hex) => ({ proposalType: "add", add: { keyPackage: decodeKeyPackage(hex) } }));
    const result = await commit(group, proposals, sendPublic, ratchet_tree_extension);
    return {
      commit: toHex(mls.encodeMlsMessage(result.commit)),
      welcome: encodeMessage("mls_welcome", "welcome", result.welcome),
      group_info: await groupInfo(group),
    };
  },

  async remove_members({ handle, leaf_indexes, public: sendPublic }) {
    const group = lookup(handle, "group");
    const proposals = leaf_indexes.map((removed) => ({ proposalType: "remove", remove: { removed } }));
    const result = await commit(group, proposals, sendPublic);
    return { commit: toHex(mls.encodeMlsMessage(result.commit)) };
  },

  // A commit without proposals carries an UpdatePath: a full key update.
  async update({ handle, public: sendPublic }) {
    const result = await commit(lookup(handle, "group"), [], sendPublic);
    return { commit: toHex(mls.encodeMlsMessage(result.commit)) };
  },

  // A proposal sent alone, for a later commit (by any member) to include by reference.
  async propose({ handle, add, remove, public: sendPublic = true }) {
    const group = lookup(handle, "group");
    const proposal =
      add !== undefined
        ? { proposalType: "add", add: { keyPackage: decodeKeyPackage(add) } }
        : { proposalType: "remove", remove: { removed: remove } };
    const result = await mls.createProposal(group.state, sendPublic, proposal, group.impl);
    group.state = result.newState;
    return { message: toHex(mls.encodeMlsMessage(result.message)) };
  },

  async commit({ handle, public: sendPublic }) {
    const result = await commit(lookup(handle, "group"), [], sendPublic);
    return { commit: toHex(mls.encodeMlsMessage(result.commit)), ...encodeWelcome(result.welcome) };
  },

  async group_info({ handle, rfc_external_pub }) {
    return { group_info: await groupInfo(lookup(handle, "group"), rfc_external_pub) };
  },

  async join_from_welcome({ key_package, welcome, ratchet_tree }) {
    const { publicPackage, privatePackage, impl } = lookup(key_package, "key_package");
    const message = decodeMessage(welcome, "welcome");
    if (message.wireformat !== "mls_welcome") throw new Error(`expected a welcome, got ${message.wireformat}`);
    const tree = ratchet_tree === undefined ? undefined : decodeRatchetTree(fromHex(ratchet_tree, "ratchet_tree"), 0)[0];
    const state = await mls.joinGroup(message.welcome, publicPackage, privatePackage, mls.emptyPskIndex, impl, tree);
    return { handle: keep("group", { state, impl }) };
  },

  // ts-mls reads external_pub as the bare key (see groupInfo), and takes the
  // ratchet tree from the GroupInfo's extension.
  async join_external({ group_info, identity }) {
    const message = decodeMessage(group_info, "group info");
    if (message.wireformat !== "mls_group_info") throw new Error(`expected a group info, got ${message.wireformat}`);
    const suite = mls.ciphersuites[message.groupInfo.groupContext.cipherSuite];
    const { publicPackage, privatePackage, impl } = await newKeyPackage(identity, suite);
    const joined = await mls.joinGroupExternal(message.groupInfo, publicPackage, privatePackage, false, impl);
    return {
      handle: keep("group", { state: joined.newState, impl }),
      commit: encodeMessage("mls_public_message", "publicMessage", joined.publicMessage),
    };
  },

  async process_message({ handle, message }) {
    const group = lookup(handle, "group");
    const decoded = decodeMessage(message, "message");
    const result = await mls.processMessage(decoded, group.state, mls.emptyPskIndex, mls.acceptAll, group.impl);
    group.state = result.newState;
    const epoch = Number(group.state.groupContext.epoch);
    if (result.kind === "applicationMessage") return { kind: "application", plaintext: toHex(result.message), epoch };
    return { kind: contentTypeOf(decoded), epoch };
  },

  async encrypt_application({ handle, plaintext }) {
    const group = lookup(handle, "group");
    const result = await mls.createApplicationMessage(group.state, fromHex(plaintext, "plaintext"), group.impl);
    group.state = result.newState;
    return { message: encodeMessage("mls_private_message", "privateMessage", result.privateMessage) };
  },

  async export_secret({ handle, label, context, length }) {
    const { state, impl } = lookup(handle, "group");
    const secret = await mls.mlsExporter(state.keySchedule.exporterSecret, label, fromHex(context, "context"), length, impl);
    return { secret: toHex(secret) };
  },

  async epoch_authenticator({ handle }) {
    return { epoch_authenticator: toHex(lookup(handle, "group").state.keySchedule.epochAuthenticator) };
  },

  async epoch({ handle }) {
    return { epoch: Number(lookup(handle, "group").state.groupContext.epoch) };
  },

  async active({ handle }) {
    return { active: lookup(handle, "group").state.groupActiveState.kind === "active" };
  },

  async ratchet_tree({ handle }) {
    return { ratchet_tree: toHex(encodeRatchetTree(lookup(handle, "group").state.ratchetTree)) };
  },

  // Leaves sit at even node indexes: leaf i is node 2i.
  async members({ handle }) {
    const tree = lookup(handle, "group").state.ratchetTree;
    const members = [];
    tree.forEach((node, index) => {
      if (node?.nodeType !== "leaf") return;
      const { credential, signaturePublicKey, hpkePublicKey } = node.leaf;
      members.push({
        leaf_index: index / 2,
        identity: toHex(credential.identity ?? new Uint8Array()),
        signature_key: toHex(signaturePublicKey),
        encryption_key: toHex(hpkePublicKey),
      });
    });
    return { members };
  },
};

// --- the request loop ------------------------------------------------------

async function answer(line) {
  let id = null;
  try {
    const request = JSON.parse(line);
    id = request.id ?? null;
    const operation = Object.hasOwn(operations, request.op) ? operations[request.op] : undefined;
    if (operation === undefined) throw new Error(`unknown op ${JSON.stringify(request.op)}`);
    return { id, ok: true, result: await operation(request.args ?? {}) };
  } catch (error) {
    return { id, ok: false, error: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` };
  }
}

// Requests are answered one at a time, in order: each may change a group the
// next one uses.
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  process.stdout.write(`${JSON.stringify(await answer(line))}\n`);
}
