// Invariant: the body reader holds at most `limit` bytes whatever a client sends — it rejects with 413 at the chunk
// that crosses the cap, before the body ends, and ignores everything after — and decoding refuses rather than
// repairs: wrong content type 415, invalid UTF-8 400, malformed JSON 400.
import { expect } from 'chai';
import { collectBody, decodeBody, type BodySource } from '../../../http/body.js';
import { TroupeError } from '../../../ops/kernel/errors.js';

class ScriptedSource implements BodySource {
  handler: ((chunk: ArrayBuffer, isLast: boolean) => void) | undefined;
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): void {
    this.handler = handler;
  }
  push(bytes: number, isLast = false): void {
    this.handler!(new Uint8Array(bytes).fill(0x61).buffer, isLast);
  }
}

const codeOf = (p: Promise<unknown>) => p.then(() => 'resolved', (e: unknown) => (e instanceof TroupeError ? e.code : String(e)));

describe('http body reader', () => {
  it('rejects with HTTP_BODY_TOO_LARGE at the chunk that passes the cap, before the last chunk', async () => {
    const source = new ScriptedSource();
    let settled = false;
    const body = collectBody(source, { limit: 10, declaredLength: undefined, onAbort: () => {} });
    void body.then(() => (settled = true), () => (settled = true));
    source.push(6);
    await Promise.resolve();
    expect(settled).to.equal(false);
    source.push(5);
    expect(await codeOf(body)).to.equal('HTTP_BODY_TOO_LARGE');
    // Later chunks are ignored rather than buffered.
    source.push(1_000_000, true);
  });

  it('resolves with the exact bytes at the cap', async () => {
    const source = new ScriptedSource();
    const body = collectBody(source, { limit: 10, declaredLength: '10', onAbort: () => {} });
    source.push(4);
    source.push(6, true);
    expect((await body).length).to.equal(10);
  });

  it('refuses a declared length over the cap, or one that is not a number, without waiting for data', async () => {
    expect(await codeOf(collectBody(new ScriptedSource(), { limit: 10, declaredLength: '11', onAbort: () => {} }))).to.equal('HTTP_BODY_TOO_LARGE');
    expect(await codeOf(collectBody(new ScriptedSource(), { limit: 10, declaredLength: '1e3', onAbort: () => {} }))).to.equal('VALIDATION_FAILED');
  });

  it('settles (as ClientAborted) when the client goes away mid-body', async () => {
    const source = new ScriptedSource();
    let abort: () => void = () => {};
    const body = collectBody(source, { limit: 10, declaredLength: undefined, onAbort: (fn) => (abort = fn) });
    source.push(3);
    abort();
    expect(await body.then(() => 'resolved', (e: Error) => e.name)).to.equal('ClientAborted');
  });

  it('decodes JSON strictly and in order: 415, then UTF-8, then JSON', () => {
    const code = (fn: () => unknown) => {
      try {
        fn();
        return 'ok';
      } catch (e) {
        return (e as TroupeError).code;
      }
    };
    const badUtf8 = Buffer.from([0xff, 0xfe]);
    expect(code(() => decodeBody('json', 'text/plain', badUtf8))).to.equal('HTTP_UNSUPPORTED_MEDIA_TYPE');
    expect(code(() => decodeBody('json', 'application/json', badUtf8))).to.equal('HTTP_BAD_UTF8');
    expect(code(() => decodeBody('json', 'application/json', Buffer.from('{')))).to.equal('HTTP_BAD_JSON');
    expect(code(() => decodeBody('json', undefined, Buffer.from('{}')))).to.equal('HTTP_UNSUPPORTED_MEDIA_TYPE');
    expect(decodeBody('json', 'application/json;charset="utf-8"', Buffer.from('{"é":1}'))).to.deep.equal({ é: 1 });
    expect(decodeBody('json', undefined, Buffer.alloc(0))).to.deep.equal({});
  });

  it('refuses overlong encodings and lone surrogates as invalid UTF-8', () => {
    for (const bytes of [[0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80]]) {
      expect(() => decodeBody('json', 'application/json', Buffer.from([0x22, ...bytes, 0x22]))).to.throw(TroupeError).with.property('code', 'HTTP_BAD_UTF8');
    }
  });

  it('keeps the first value of a repeated form field and accepts no other content type', () => {
    expect({ ...(decodeBody('form', 'application/x-www-form-urlencoded', Buffer.from('a=1&a=2&b=%C3%A9')) as object) }).to.deep.equal({ a: '1', b: 'é' });
    expect(() => decodeBody('form', 'multipart/form-data', Buffer.from('a'))).to.throw(TroupeError).with.property('code', 'HTTP_UNSUPPORTED_MEDIA_TYPE');
  });
});
