// The ELF pre-check of plugin files (plugin_file_check.h). Every read of the
// image goes through read_at(), which copies out of the buffer after an
// overflow-checked bounds test, so any byte string is safe to check (and no
// unaligned access happens on a misaligned header).
#include "plugin_file_check.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <system_error>
#include <vector>

namespace tessera::detail {
namespace {

// The host's own class, byte order and machine: a plugin must match all three.
#if defined(__LP64__)
constexpr unsigned char kHostClass = ELFCLASS64;
#else
constexpr unsigned char kHostClass = ELFCLASS32;
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr unsigned char kHostData = ELFDATA2LSB;
#else
constexpr unsigned char kHostData = ELFDATA2MSB;
#endif
#if defined(__x86_64__)
constexpr unsigned kHostMachine = 62;  // EM_X86_64
#elif defined(__aarch64__)
constexpr unsigned kHostMachine = 183;  // EM_AARCH64
#elif defined(__i386__)
constexpr unsigned kHostMachine = 3;  // EM_386
#elif defined(__arm__)
constexpr unsigned kHostMachine = 40;  // EM_ARM
#elif defined(__riscv)
constexpr unsigned kHostMachine = 243;  // EM_RISCV
#elif defined(__powerpc64__)
constexpr unsigned kHostMachine = 21;  // EM_PPC64
#elif defined(__s390x__)
constexpr unsigned kHostMachine = 22;  // EM_S390
#elif defined(__loongarch__)
constexpr unsigned kHostMachine = 258;  // EM_LOONGARCH
#else
constexpr unsigned kHostMachine = 0;  // unknown here: left to dlopen
#endif

using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);
using Shdr = ElfW(Shdr);
using Dyn = ElfW(Dyn);
using Addr = ElfW(Addr);

std::string machine_name(unsigned m) {
  switch (m) {
    case 3: return "x86 (32-bit)";
    case 8: return "mips";
    case 20: return "ppc";
    case 21: return "ppc64";
    case 22: return "s390x";
    case 40: return "arm (32-bit)";
    case 43: return "sparc64";
    case 50: return "ia64";
    case 62: return "x86-64";
    case 183: return "aarch64";
    case 190: return "NVIDIA CUDA";
    case 224: return "AMD GPU";
    case 243: return "riscv";
    case 247: return "eBPF";
    case 258: return "loongarch";
    default: return "ELF machine " + std::to_string(m);
  }
}

std::string type_name(unsigned t) {
  switch (t) {
    case ET_NONE: return "ET_NONE: no file type";
    case ET_REL: return "ET_REL: an object file, not linked";
    case ET_EXEC: return "ET_EXEC: an executable";
    case ET_CORE: return "ET_CORE: a core dump";
    default: return "ELF type " + std::to_string(t);
  }
}

// a + b, false on overflow.
bool add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }
bool mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

class Image {
 public:
  Image(const unsigned char* data, size_t size) : data_(data), size_(size) {}
  uint64_t size() const { return size_; }
  // Whether [offset, offset + length) lies within the image.
  bool holds(uint64_t offset, uint64_t length) const {
    uint64_t end = 0;
    return add(offset, length, &end) && end <= size_;
  }
  template <typename T>
  bool read_at(uint64_t offset, T* out) const {
    if (!holds(offset, sizeof(T))) return false;
    std::memcpy(out, data_ + offset, sizeof(T));
    return true;
  }
  // The NUL-terminated string at offset, at most max_len bytes, or "" if none fits.
  std::string_view string_at(uint64_t offset, size_t max_len) const {
    if (offset >= size_) return {};
    const size_t avail = static_cast<size_t>(std::min<uint64_t>(size_ - offset, max_len));
    const auto* p = reinterpret_cast<const char*>(data_ + offset);
    const size_t n = strnlen(p, avail);
    return n < avail ? std::string_view(p, n) : std::string_view();
  }

 private:
  const unsigned char* data_;
  uint64_t size_;
};

std::string truncated(const std::string& what, uint64_t end, uint64_t size) {
  return "truncated: " + what + " ends at byte " + std::to_string(end) + ", the file is " + std::to_string(size) +
         " bytes";
}

struct Load {
  uint64_t offset, filesz, vaddr, memsz;
};

// The PT_LOAD segments, for address checks of the dynamic section.
class Segments {
 public:
  explicit Segments(std::vector<Load> loads) : loads_(std::move(loads)) {}
  // Whether the addresses [vaddr, vaddr + length) lie in one segment's memory.
  bool maps(uint64_t vaddr, uint64_t length) const {
    uint64_t end = 0;
    if (!add(vaddr, length, &end)) return false;
    for (const Load& l : loads_)
      if (vaddr >= l.vaddr && end <= l.vaddr + l.memsz) return true;
    return false;
  }
  // The file offset holding address vaddr, if a segment's file bytes hold it;
  // false when the address is in no segment or in a segment's zero-filled tail.
  bool file_offset(uint64_t vaddr, uint64_t* offset) const {
    for (const Load& l : loads_) {
      if (vaddr >= l.vaddr && vaddr - l.vaddr < l.filesz) {
        *offset = l.offset + (vaddr - l.vaddr);
        return true;
      }
    }
    return false;
  }

 private:
  std::vector<Load> loads_;
};

std::string check_dynamic(const Image& img, const Phdr& dyn, const std::vector<Load>& loads) {
  uint64_t end = 0;
  if (!add(dyn.p_offset, dyn.p_filesz, &end)) return "corrupt: the dynamic section's file range overflows";
  if (end > img.size()) return truncated("the dynamic section (PT_DYNAMIC)", end, img.size());
  bool inside = false;
  for (const Load& l : loads) inside = inside || (dyn.p_offset >= l.offset && end <= l.offset + l.filesz);
  const Segments segments(loads);
  if (!inside || !segments.maps(dyn.p_vaddr, dyn.p_filesz))
    return "corrupt: the dynamic section (PT_DYNAMIC) is not inside a loadable segment (PT_LOAD)";

  // The entries the dynamic loader follows before it runs anything: each an
  // address it reads (or a size that goes with one).
  uint64_t strtab = 0, strsz = 0;
  bool has_strtab = false, terminated = false;
  struct Range {
    int64_t addr_tag, size_tag;
    const char* name;
    uint64_t addr = 0, size = 0;
    bool has_addr = false;
  };
  Range ranges[] = {{DT_STRTAB, DT_STRSZ, "DT_STRTAB"},         {DT_RELA, DT_RELASZ, "DT_RELA"},
                    {DT_REL, DT_RELSZ, "DT_REL"},                {DT_JMPREL, DT_PLTRELSZ, "DT_JMPREL"},
                    {DT_INIT_ARRAY, DT_INIT_ARRAYSZ, "DT_INIT_ARRAY"}, {DT_FINI_ARRAY, DT_FINI_ARRAYSZ, "DT_FINI_ARRAY"},
                    {DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ, "DT_PREINIT_ARRAY"}, {36, 35, "DT_RELR"}};
  std::vector<uint64_t> string_refs;
  const uint64_t count = dyn.p_filesz / sizeof(Dyn);
  for (uint64_t i = 0; i < count; ++i) {
    Dyn d;
    img.read_at(dyn.p_offset + i * sizeof(Dyn), &d);  // within [p_offset, end): checked above
    const int64_t tag = static_cast<int64_t>(d.d_tag);
    const uint64_t value = static_cast<uint64_t>(d.d_un.d_val);
    if (tag == DT_NULL) {
      terminated = true;
      break;
    }
    const char* point = nullptr;  // an address of something the loader reads
    switch (tag) {
      case DT_PLTGOT: point = "DT_PLTGOT"; break;
      case DT_HASH: point = "DT_HASH"; break;
      case DT_SYMTAB: point = "DT_SYMTAB"; break;
      case DT_INIT: point = "DT_INIT"; break;
      case DT_FINI: point = "DT_FINI"; break;
      case DT_GNU_HASH: point = "DT_GNU_HASH"; break;
      case DT_VERSYM: point = "DT_VERSYM"; break;
      case DT_VERDEF: point = "DT_VERDEF"; break;
      case DT_VERNEED: point = "DT_VERNEED"; break;
      case DT_NEEDED:
      case DT_SONAME:
      case DT_RPATH:
      case DT_RUNPATH: string_refs.push_back(value); break;
      default: break;
    }
    if (point != nullptr && !segments.maps(value, 1))
      return std::string("corrupt: dynamic entry ") + point + " points outside the loadable segments";
    for (Range& r : ranges) {
      if (tag == r.addr_tag) {
        r.addr = value;
        r.has_addr = true;
      } else if (tag == r.size_tag) {
        r.size = value;
      }
    }
    if (tag == DT_STRTAB) {
      strtab = value;
      has_strtab = true;
    } else if (tag == DT_STRSZ) {
      strsz = value;
    }
  }
  if (!terminated) return "corrupt: the dynamic section has no DT_NULL entry to end it";
  for (const Range& r : ranges) {
    if (r.has_addr && !segments.maps(r.addr, r.size))
      return std::string("corrupt: dynamic entry ") + r.name + " (" + std::to_string(r.size) +
             " bytes) lies outside the loadable segments";
  }
  if (!has_strtab) return "corrupt: the dynamic section has no string table (DT_STRTAB)";
  for (uint64_t ref : string_refs)
    if (ref >= strsz) return "corrupt: a dynamic entry names a string past the end of the string table";
  // Strings run to a NUL: the table's last byte must be one, or a name could
  // run off the mapping. (A last byte in a zero-filled tail is 0.)
  if (strsz == 0) return "corrupt: the dynamic string table is empty";
  if (uint64_t offset = 0; segments.file_offset(strtab + strsz - 1, &offset)) {
    unsigned char byte = 1;
    if (!img.read_at(offset, &byte) || byte != 0) return "corrupt: the dynamic string table does not end in NUL";
  }
  return "";
}

std::string check_sections(const Image& img, const Ehdr& eh) {
  if (eh.e_shoff == 0) return "";  // no section headers: the loader does not need them
  if (eh.e_shentsize != sizeof(Shdr))
    return "corrupt: section header entries of " + std::to_string(eh.e_shentsize) + " bytes, expected " +
           std::to_string(sizeof(Shdr));
  uint64_t count = eh.e_shnum;
  if (count == 0) {  // extended numbering: the count is in section 0's sh_size
    Shdr first;
    if (!img.read_at(eh.e_shoff, &first)) return truncated("the section header table", eh.e_shoff + sizeof(Shdr), img.size());
    count = first.sh_size;
  }
  uint64_t bytes = 0, end = 0;
  if (!mul(count, sizeof(Shdr), &bytes) || !add(eh.e_shoff, bytes, &end))
    return "corrupt: the section header table's size overflows";
  if (end > img.size()) return truncated("the section header table", end, img.size());
  Shdr names{};
  const bool has_names = eh.e_shstrndx != SHN_UNDEF && eh.e_shstrndx < count &&
                         img.read_at(eh.e_shoff + uint64_t(eh.e_shstrndx) * sizeof(Shdr), &names);
  for (uint64_t i = 0; i < count; ++i) {
    Shdr s;
    img.read_at(eh.e_shoff + i * sizeof(Shdr), &s);  // within the table: checked above
    if (s.sh_type == SHT_NOBITS || s.sh_size == 0) continue;
    uint64_t s_end = 0;
    if (!add(s.sh_offset, s.sh_size, &s_end)) return "corrupt: section " + std::to_string(i) + "'s file range overflows";
    if (s_end > img.size()) {
      std::string what = "section " + std::to_string(i);
      uint64_t name_at = 0;
      if (has_names && s.sh_name < names.sh_size && add(names.sh_offset, s.sh_name, &name_at)) {
        const std::string_view n = img.string_at(name_at, 64);
        if (!n.empty()) what += " (" + std::string(n) + ")";
      }
      return truncated(what, s_end, img.size());
    }
  }
  return "";
}

}  // namespace

std::string check_plugin_image(const unsigned char* data, size_t size) {
  const Image img(data, data == nullptr ? 0 : size);
  if (img.size() == 0) return "empty file (0 bytes)";
  unsigned char ident[EI_NIDENT] = {};
  std::memcpy(ident, data, std::min<size_t>(img.size(), EI_NIDENT));
  if (img.size() < SELFMAG || std::memcmp(ident, ELFMAG, SELFMAG) != 0) return "not an ELF file (no ELF magic number)";
  if (img.size() < EI_NIDENT) return truncated("the ELF identification", EI_NIDENT, img.size());
  const auto class_name = [](unsigned c) { return c == ELFCLASS32 ? "32-bit (ELFCLASS32)" : "64-bit (ELFCLASS64)"; };
  if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64)
    return "corrupt: invalid ELF class " + std::to_string(ident[EI_CLASS]);
  if (ident[EI_CLASS] != kHostClass)
    return std::string("built for ") + class_name(ident[EI_CLASS]) + ", this host is " + class_name(kHostClass);
  const auto order_name = [](unsigned d) { return d == ELFDATA2LSB ? "little-endian" : "big-endian"; };
  if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB)
    return "corrupt: invalid ELF byte order " + std::to_string(ident[EI_DATA]);
  if (ident[EI_DATA] != kHostData)
    return std::string("built for a ") + order_name(ident[EI_DATA]) + " machine, this host is " + order_name(kHostData);
  if (ident[EI_VERSION] != EV_CURRENT) return "unsupported ELF version " + std::to_string(ident[EI_VERSION]);

  Ehdr eh;
  if (!img.read_at(0, &eh)) return truncated("the ELF header", sizeof(Ehdr), img.size());
  if (eh.e_type != ET_DYN) return "not a shared library (" + type_name(eh.e_type) + ")";
  if (kHostMachine != 0 && eh.e_machine != kHostMachine)
    return "built for " + machine_name(eh.e_machine) + ", this host is " + machine_name(kHostMachine);
  if (eh.e_version != EV_CURRENT) return "unsupported ELF version " + std::to_string(eh.e_version);

  // Program headers: what the dynamic loader maps.
  if (eh.e_phnum == 0) return "not a loadable library: no program headers";
  if (eh.e_phnum == PN_XNUM) return "corrupt: too many program headers (extended numbering is not supported)";
  if (eh.e_phentsize != sizeof(Phdr))
    return "corrupt: program header entries of " + std::to_string(eh.e_phentsize) + " bytes, expected " +
           std::to_string(sizeof(Phdr));
  const uint64_t ph_bytes = uint64_t(eh.e_phnum) * sizeof(Phdr);  // < 2^16 * 56: no overflow
  uint64_t ph_end = 0;
  if (!add(eh.e_phoff, ph_bytes, &ph_end)) return "corrupt: the program header table's offset overflows";
  if (ph_end > img.size()) return truncated("the program header table", ph_end, img.size());

  std::vector<Phdr> phdrs(eh.e_phnum);
  int num_loads = 0, num_dynamic = 0;
  for (size_t i = 0; i < phdrs.size(); ++i) {
    img.read_at(eh.e_phoff + i * sizeof(Phdr), &phdrs[i]);  // within the table: checked above
    num_loads += phdrs[i].p_type == PT_LOAD;
    num_dynamic += phdrs[i].p_type == PT_DYNAMIC;
  }
  if (num_loads == 0) return "not a loadable library: no loadable segment (PT_LOAD)";
  std::vector<Load> loads;
  for (const Phdr& p : phdrs) {
    if (p.p_type != PT_LOAD) continue;
    const std::string which =
        "PT_LOAD segment " + std::to_string(loads.size() + 1) + " of " + std::to_string(num_loads);
    uint64_t end = 0, vend = 0;
    if (p.p_filesz > p.p_memsz) return "corrupt: " + which + " has more bytes in the file than in memory";
    if (!add(p.p_offset, p.p_filesz, &end) || !add(p.p_vaddr, p.p_memsz, &vend))
      return "corrupt: " + which + "'s range overflows";
    if (end > img.size()) return truncated(which, end, img.size());
    loads.push_back({p.p_offset, p.p_filesz, p.p_vaddr, p.p_memsz});
  }
  if (num_dynamic == 0) return "not a shared library: no dynamic section (PT_DYNAMIC)";
  if (num_dynamic > 1) return "corrupt: " + std::to_string(num_dynamic) + " dynamic sections (PT_DYNAMIC)";
  for (const Phdr& p : phdrs) {
    if (p.p_type != PT_DYNAMIC) continue;
    if (std::string why = check_dynamic(img, p, loads); !why.empty()) return why;
  }
  return check_sections(img, eh);
}

namespace {

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

void fill_identity(const struct stat& st, PluginFileIdentity* id) {
  id->device = st.st_dev;
  id->inode = st.st_ino;
  id->size = static_cast<uint64_t>(st.st_size);
  id->mtime_sec = st.st_mtim.tv_sec;
  id->mtime_nsec = st.st_mtim.tv_nsec;
}

const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Closes a descriptor on every return path.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string check_plugin_file(const std::string& path, PluginFileIdentity* identity) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  if (f.fd < 0) return "cannot open it: " + errno_text(errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return "cannot stat it: " + errno_text(errno);
  if (!S_ISREG(st.st_mode)) return std::string(file_kind(st.st_mode)) + ", not a plugin file";
  fill_identity(st, identity);
  if (st.st_size == 0) return "empty file (0 bytes)";
  const size_t size = static_cast<size_t>(st.st_size);
  // Mapped, not read: plugins with debug information run to tens of megabytes
  // and the check touches a few pages. (A file shrunk by someone else while we
  // read it could still fault here — the same race dlopen itself runs.)
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (map == MAP_FAILED) return "cannot map it into memory: " + errno_text(errno);
  std::string why;
  try {
    why = check_plugin_image(static_cast<const unsigned char*>(map), size);
  } catch (...) {
    ::munmap(map, size);
    throw;
  }
  ::munmap(map, size);
  return why.empty() ? why : "not a loadable shared library (" + why + ")";
}

bool plugin_file_identity(const std::string& path, PluginFileIdentity* identity) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  fill_identity(st, identity);
  return true;
}

}  // namespace tessera::detail
