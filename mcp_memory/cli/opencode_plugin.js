// mcp-memory: written by `mcp-memory install opencode`; `mcp-memory install opencode --uninstall` removes it.
// OpenCode has no command hooks: this plugin hands each event to `mcp-memory hook opencode --event NAME`
// (the event as JSON on stdin) and adds what that prints back to the system prompt of the same session.
// Plugin API: @opencode-ai/plugin, Hooks (packages/plugin/src/index.ts in anomalyco/opencode).
import { spawn } from "node:child_process"

const PROGRAM = __PROGRAM__
const SERVER = __SERVER__
const ENV = __ENV__
const RECALL_MS = __RECALL_MS__
const CAPTURE_MS = __CAPTURE_MS__
const OUTPUT_CHARS = 8000 // of a tool's output: enough for an exit status and an error's first lines

// Run the hook; resolves to what it printed ("" on any failure: the memory never fails the session).
function hook(event, payload, ms) {
  return new Promise((resolve) => {
    let out = ""
    let child
    try {
      child = spawn(PROGRAM[0], [...PROGRAM.slice(1), "hook", "opencode", "--event", event, ...SERVER], {
        env: { ...process.env, ...ENV },
        stdio: ["pipe", "pipe", "ignore"],
      })
    } catch {
      return resolve("")
    }
    const timer = setTimeout(() => child.kill(), ms)
    child.stdout.on("data", (chunk) => (out += chunk))
    child.on("error", () => resolve(""))
    child.on("close", () => {
      clearTimeout(timer)
      resolve(out)
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify({ event, timestamp: Date.now(), ...payload }))
  })
}

function context(printed) {
  try {
    const found = JSON.parse(printed)?.hookSpecificOutput?.additionalContext
    return typeof found === "string" ? found : ""
  } catch {
    return ""
  }
}

function clip(text) {
  if (typeof text !== "string" || text.length <= OUTPUT_CHARS) return text
  return text.slice(0, OUTPUT_CHARS / 2) + "\n...\n" + text.slice(-OUTPUT_CHARS / 2)
}

// A tool's arguments with long strings clipped (a written file's content is never kept, only its path),
// but a patch whole: its file headers are what is kept of it.
function clipped(args) {
  if (!args || typeof args !== "object") return args
  return Object.fromEntries(Object.entries(args).map(([key, value]) => [key, key === "patchText" ? value : clip(value)]))
}

export const McpMemory = async ({ directory }) => {
  const started = new Set() // sessions whose start was recalled
  const injected = new Map() // session -> {start, prompt}: what the system prompt gets
  const replies = new Map() // session -> {messageID, texts}: the last assistant message's text
  const pending = new Set() // capture hooks still running, awaited before OpenCode exits

  const capture = (event, payload) => {
    const running = hook(event, payload, CAPTURE_MS)
    pending.add(running)
    running.finally(() => pending.delete(running))
  }

  return {
    "chat.message": async (input, output) => {
      const sessionID = input.sessionID
      const prompt = output.parts
        .filter((part) => part.type === "text" && !part.synthetic && !part.ignored)
        .map((part) => part.text)
        .join("\n")
      const base = { sessionID, directory }
      const now = injected.get(sessionID) ?? { start: "", prompt: "" }
      if (!started.has(sessionID)) {
        started.add(sessionID)
        now.start = context(await hook("session.created", base, RECALL_MS))
      }
      const time = output.message?.time?.created
      now.prompt = context(await hook("chat.message", { ...base, prompt, timestamp: time }, RECALL_MS))
      injected.set(sessionID, now)
    },
    "experimental.chat.system.transform": async (input, output) => {
      const now = injected.get(input.sessionID)
      for (const text of [now?.start, now?.prompt]) if (text) output.system.push(text)
    },
    "experimental.text.complete": async (input, output) => {
      const last = replies.get(input.sessionID)
      if (last?.messageID === input.messageID) last.texts.push(output.text)
      else replies.set(input.sessionID, { messageID: input.messageID, texts: [output.text] })
    },
    "tool.execute.after": async (input, output) => {
      const { output: _shown, ...metadata } = output?.metadata ?? {}
      capture("tool.execute.after", {
        sessionID: input.sessionID,
        directory,
        tool: input.tool,
        args: clipped(input.args),
        title: output?.title,
        metadata,
        output: clip(output?.output),
      })
    },
    "experimental.session.compacting": async (input) => {
      capture("experimental.session.compacting", { sessionID: input.sessionID, directory })
    },
    event: async ({ event }) => {
      if (event.type !== "session.idle") return
      const sessionID = event.properties?.sessionID
      const last = replies.get(sessionID)
      if (!last) return
      replies.delete(sessionID)
      capture("session.idle", { sessionID, directory, text: last.texts.join("\n") })
    },
    dispose: async () => {
      await Promise.race([Promise.all([...pending]), new Promise((done) => setTimeout(done, CAPTURE_MS))])
    },
  }
}
