declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0 to 16383) of a key, by its hash tag when it has one. */
  export default function keySlot(key: string): number;
}
