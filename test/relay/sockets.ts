/**
 * What this process holds in the kernel: its TCP sockets (from /proc/self/net/tcp{,6}, kept to the
 * inodes among /proc/self/fd) with their state. Linux only.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** Kernel TCP states (include/net/tcp_states.h). */
const TCP_STATES: Record<string, string> = {
  "01": "ESTABLISHED",
  "02": "SYN_SENT",
  "03": "SYN_RECV",
  "04": "FIN_WAIT1",
  "05": "FIN_WAIT2",
  "06": "TIME_WAIT",
  "07": "CLOSE",
  "08": "CLOSE_WAIT",
  "09": "LAST_ACK",
  "0A": "LISTEN",
  "0B": "CLOSING",
};

export interface OwnSocket {
  readonly localPort: number;
  readonly remotePort: number;
  readonly state: string;
}

function ownSocketInodes(): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed while listing
    }
  }
  return inodes;
}

/** Every TCP socket this process has open. */
export function ownTcpSockets(): OwnSocket[] {
  const inodes = ownSocketInodes();
  const out: OwnSocket[] = [];
  for (const file of ["/proc/self/net/tcp", "/proc/self/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9]!)) continue;
      const port = (addr: string) => parseInt(addr.split(":")[1] ?? "0", 16);
      out.push({ localPort: port(f[1]!), remotePort: port(f[2]!), state: TCP_STATES[f[3]!] ?? f[3]! });
    }
  }
  return out;
}

/** This process's sockets connected to `remotePort`, counted by state. */
export function socketStatesTo(remotePort: number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of ownTcpSockets()) if (s.remotePort === remotePort) counts[s.state] = (counts[s.state] ?? 0) + 1;
  return counts;
}
