/*
** varint.h -- SQLite's varints and record serial types: the encoding
** primitives that row records (row.c) and the run format (runfmt.c) share.
** Header-only, at the bottom of ext/: it calls nothing.
*/
#ifndef GPUDS_VARINT_H
#define GPUDS_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* The varint at a[0..nAvail-1] into *pv: its bytes (1 to 9), or 0 if it
** runs past nAvail (truncated). */
static inline int gpudsVarintGet(const unsigned char *a, size_t nAvail, uint64_t *pv){
  uint64_t v = 0;
  int i;
  if( nAvail>0 && a[0]<0x80 ){ *pv = a[0]; return 1; }
  for(i=0; i<8; i++){
    if( (size_t)i>=nAvail ) return 0;
    v = (v<<7) | (a[i] & 0x7f);
    if( (a[i] & 0x80)==0 ){ *pv = v; return i+1; }
  }
  if( nAvail<9 ) return 0;
  *pv = (v<<8) | a[8];
  return 9;
}

/* Write v as a varint at a (room for 9 bytes); its bytes. */
static inline int gpudsVarintPut(unsigned char *a, uint64_t v){
  unsigned char buf[9];
  int i, n;
  if( v<0x80 ){ a[0] = (unsigned char)v; return 1; }
  if( v & ((uint64_t)0xff000000<<32) ){
    a[8] = (unsigned char)v;
    v >>= 8;
    for(i=7; i>=0; i--){ a[i] = (unsigned char)((v & 0x7f) | 0x80); v >>= 7; }
    return 9;
  }
  n = 0;
  do{ buf[n++] = (unsigned char)((v & 0x7f) | 0x80); v >>= 7; }while( v!=0 );
  buf[0] &= 0x7f;
  for(i=0; i<n; i++) a[i] = buf[n-1-i];
  return n;
}

/* Bytes of varint v. */
static inline int gpudsVarintLen(uint64_t v){
  int n = 1;
  if( v & ((uint64_t)0xff000000<<32) ) return 9;
  while( (v >>= 7)!=0 ) n++;
  return n;
}

/* Body bytes of serial type s of a format-4 record; -1 for 10 and 11. */
static inline int64_t gpudsSerialBytes(uint64_t s){
  static const signed char aSize[12] = { 0, 1, 2, 3, 4, 6, 8, 8, 0, 0, -1, -1 };
  if( s<12 ) return aSize[s];
  if( s>((uint64_t)1<<40) ) return -1;       /* longer than any record */
  return (int64_t)((s-12)/2);
}

/* The serial type SQLite gives integer x: the fewest bytes that hold it
** (8 and 9 for 0 and 1, no body). */
static inline uint64_t gpudsIntSerial(int64_t x){
  uint64_t u = x<0 ? ~(uint64_t)x : (uint64_t)x;
  if( x==0 || x==1 ) return 8 + (uint64_t)x;
  return u<=127 ? 1 : u<=32767 ? 2 : u<=8388607 ? 3 : u<=2147483647 ? 4
       : u<=0x7fffffffffffULL ? 5 : 6;
}

/* Write the nb-byte big-endian body of integer x at b (nb from
** gpudsSerialBytes(gpudsIntSerial(x))). */
static inline void gpudsIntBody(int64_t x, int nb, unsigned char *b){
  int i;
  for(i=nb-1; i>=0; i--){ b[i] = (unsigned char)x; x = (int64_t)((uint64_t)x >> 8); }
}

#endif /* GPUDS_VARINT_H */
