// Publishes npm tarballs to a registry the way `npm publish` does (a PUT of the
// packument with the tarball attached), many in one process:
//   node npm-publish.mjs adduser REGISTRY NAME PASSWORD   -> prints a token
//   node npm-publish.mjs publish REGISTRY TOKEN TARBALL...
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { createHash } from "node:crypto";
import { basename } from "node:path";

const [, , command, registry, ...rest] = process.argv;

async function adduser(name, password) {
  const res = await fetch(`${registry}-/user/org.couchdb.user:${name}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ _id: `org.couchdb.user:${name}`, name, password, type: "user", roles: [] }),
  });
  const body = await res.json();
  if (!res.ok || !body.token) throw new Error(`adduser: ${res.status} ${JSON.stringify(body)}`);
  console.log(body.token);
}

// The package.json inside a tarball (the first member named <dir>/package.json).
function manifestOf(tgz) {
  const tar = gunzipSync(tgz);
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const text = (from, len) => header.subarray(from, from + len).toString("utf8").replace(/\0.*$/s, "");
    const prefix = text(345, 155);
    const name = (prefix ? prefix + "/" : "") + text(0, 100);
    const size = parseInt(text(124, 12).trim() || "0", 8);
    const body = tar.subarray(at + 512, at + 512 + size);
    if (/^[^/]+\/package\.json$/.test(name)) return JSON.parse(body.toString("utf8"));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error("no package.json in the tarball");
}

async function publish(token, file) {
  const tgz = readFileSync(file);
  const manifest = manifestOf(tgz);
  const { name, version } = manifest;
  const short = name.startsWith("@") ? name.split("/")[1] : name;
  const attachment = `${short}-${version}.tgz`;
  const integrity = "sha512-" + createHash("sha512").update(tgz).digest("base64");
  const shasum = createHash("sha1").update(tgz).digest("hex");
  const doc = {
    _id: name,
    name,
    "dist-tags": { latest: version },
    versions: {
      [version]: {
        ...manifest,
        _id: `${name}@${version}`,
        dist: { integrity, shasum, tarball: `${registry}${name}/-/${attachment}` },
      },
    },
    _attachments: {
      [attachment]: { content_type: "application/octet-stream", data: tgz.toString("base64"), length: tgz.length },
    },
  };
  const res = await fetch(`${registry}${name.replace("/", "%2f")}`, {
    method: "PUT",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(doc),
  });
  if (!res.ok) throw new Error(`publish ${basename(file)}: ${res.status} ${await res.text()}`);
}

if (command === "adduser") {
  await adduser(rest[0], rest[1]);
} else if (command === "publish") {
  const [token, ...files] = rest;
  for (const file of files) await publish(token, file);
} else {
  throw new Error(`unknown command ${command}`);
}
