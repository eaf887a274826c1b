/** A FIFO on an array whose taken head is dropped once it is most of the array: amortized constant time. */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    const item = this.items[this.head];
    if (item === undefined) return undefined;
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}
