import { expect } from 'chai';
import { InFlightList, type InFlightLink } from '../../../http/in-flight.js';

const item = (): InFlightLink => ({ inFlightPrev: undefined, inFlightNext: undefined, inFlightListed: false });

describe('in-flight list', () => {
  it('counts what was added and not yet removed, whatever the order, and ignores repeats', () => {
    const list = new InFlightList<InFlightLink>();
    const [a, b, c, d] = [item(), item(), item(), item()];
    for (const x of [a, b, c, d]) list.add(x);
    list.add(b);
    expect(list.size).to.equal(4);
    list.delete(c);
    list.delete(c);
    list.delete(a);
    expect(list.size).to.equal(2);
    expect(list.toArray()).to.have.members([b, d]);
    list.delete(d);
    list.delete(b);
    expect(list.size).to.equal(0);
    expect(list.toArray()).to.deep.equal([]);
    list.add(a);
    expect(list.toArray()).to.deep.equal([a]);
  });

  it('lets the caller remove every item while walking a copy', () => {
    const list = new InFlightList<InFlightLink>();
    const items = Array.from({ length: 5 }, item);
    for (const x of items) list.add(x);
    for (const x of list.toArray()) list.delete(x);
    expect(list.size).to.equal(0);
  });
});
