/** A binary heap: `pop` gives the smallest item by `compare`. */
export class MinQueue<T> {
  private readonly items: T[] = [];

  constructor(private readonly compare: (a: T, b: T) => number) {}

  get size(): number {
    return this.items.length;
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    for (let at = items.length - 1; at > 0;) {
      const parent = (at - 1) >> 1;
      if (this.compare(items[at], items[parent]) >= 0) break;
      [items[at], items[parent]] = [items[parent], items[at]];
      at = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    for (let at = 0; ;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let smallest = at;
      if (left < items.length && this.compare(items[left], items[smallest]) < 0) smallest = left;
      if (right < items.length && this.compare(items[right], items[smallest]) < 0) smallest = right;
      if (smallest === at) break;
      [items[at], items[smallest]] = [items[smallest], items[at]];
      at = smallest;
    }
    return top;
  }
}
