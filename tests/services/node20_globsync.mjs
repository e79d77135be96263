// Preloaded (`node --import <this file>`) by tests/services/conformance.py before the conformance CLI.
//
// @modelcontextprotocol/conformance imports `globSync` from "fs" at the top of its one bundled file, an
// export Node added in 22; on Node 20 the import itself fails, before any command runs. Only its
// `tier-check` command calls it (never `server` or `list`, which the tests run). So on a Node without
// fs.globSync, this registers a resolve hook that gives the CLI's `import ... from "fs"` (and only that
// importer's) a module re-exporting node:fs plus a globSync stub that throws if it is ever called.
// Nothing installed is edited, the hook does nothing on Node 22+, and if a later CLI starts to need
// globSync the stub says so instead of misbehaving. Adding fs.globSync from a --require preload does not
// work: Node fixes the named exports of a built-in's ES module when it boots.
import fs from "node:fs";
import { register } from "node:module";

const SHIM = `export * from "node:fs";
export { default } from "node:fs";
export function globSync() {
  throw new Error("fs.globSync needs Node 22+; this Node has only the test suite's stub (tests/services/node20_globsync.mjs)");
}`;

const HOOKS = `export async function resolve(specifier, context, nextResolve) {
  const fromConformance = (context.parentURL ?? "").includes("/@modelcontextprotocol/conformance/");
  if (fromConformance && (specifier === "fs" || specifier === "node:fs")) {
    return { url: ${JSON.stringify("data:text/javascript," + encodeURIComponent(SHIM))}, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}`;

if (typeof fs.globSync !== "function") {
  register("data:text/javascript," + encodeURIComponent(HOOKS));
}
