import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

/**
 * A DNS server on loopback UDP in the test process, answering TXT questions from records the test sets: the single
 * sign-on domain verification tests point the node at it (`ssoDnsServers`) and publish, change or break a domain's
 * records as its owner would. Messages are encoded by hand (RFC 1035 §4.1): the node's resolver (c-ares) asks one
 * question per message, and the answers need only TXT records, NXDOMAIN and SERVFAIL.
 */
const TYPE_TXT = 16;
const CLASS_IN = 1;
const RCODE = { ok: 0, serverFailure: 2, noSuchName: 3 } as const;

export class TestDnsServer {
  private readonly records = new Map<string, readonly string[]>();
  private readonly failing = new Set<string>();
  /** Every name asked for, lower-cased, in order. */
  readonly asked: string[] = [];

  private constructor(private readonly socket: Socket) {
    socket.on('message', (message, from) => this.answer(message, from));
  }

  static async start(): Promise<TestDnsServer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    return new TestDnsServer(socket);
  }

  /** `127.0.0.1:<port>`, as TROUPE_SSO_DNS_SERVERS takes it. */
  get address(): string {
    return `127.0.0.1:${(this.socket.address() as AddressInfo).port}`;
  }

  /** The TXT records at `name`, one string each; none makes the name not exist (NXDOMAIN). */
  setTxt(name: string, records: readonly string[]): void {
    if (records.length === 0) this.records.delete(name.toLowerCase());
    else this.records.set(name.toLowerCase(), [...records]);
  }

  /** Questions for `name` are answered SERVFAIL, as by a resolver whose upstream is down. */
  failFor(name: string, failing = true): void {
    if (failing) this.failing.add(name.toLowerCase());
    else this.failing.delete(name.toLowerCase());
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  private answer(query: Buffer, from: RemoteInfo): void {
    const question = readQuestion(query);
    if (question === undefined) return;
    this.asked.push(question.name);
    const records = this.records.get(question.name);
    const rcode = this.failing.has(question.name) ? RCODE.serverFailure : records === undefined ? RCODE.noSuchName : RCODE.ok;
    const answers = rcode === RCODE.ok && question.type === TYPE_TXT ? records! : [];
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    const recursionDesired = query[2]! & 0x01;
    header[2] = 0x80 | 0x04 | recursionDesired; // a response, authoritative
    header[3] = 0x80 | rcode; // recursion available
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const body = answers.map((text) => txtAnswer(text));
    this.socket.send(Buffer.concat([header, question.bytes, ...body]), from.port, from.address);
  }
}

function readQuestion(query: Buffer): { name: string; type: number; bytes: Buffer } | undefined {
  if (query.length < 12 || query.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  while (at < query.length && query[at] !== 0) {
    const length = query[at]!;
    labels.push(query.subarray(at + 1, at + 1 + length).toString('latin1'));
    at += 1 + length;
  }
  if (at + 5 > query.length) return undefined;
  return { name: labels.join('.').toLowerCase(), type: query.readUInt16BE(at + 1), bytes: query.subarray(12, at + 5) };
}

/** One TXT record for the name of the question (a pointer to offset 12), its text in strings of at most 255 bytes. */
function txtAnswer(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const strings: Buffer[] = [];
  for (let at = 0; at < bytes.length || strings.length === 0; at += 255) {
    const part = bytes.subarray(at, at + 255);
    strings.push(Buffer.concat([Buffer.from([part.length]), part]));
  }
  const rdata = Buffer.concat(strings);
  const fixed = Buffer.alloc(12);
  fixed.writeUInt16BE(0xc00c, 0);
  fixed.writeUInt16BE(TYPE_TXT, 2);
  fixed.writeUInt16BE(CLASS_IN, 4);
  fixed.writeUInt32BE(60, 6);
  fixed.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([fixed, rdata]);
}
