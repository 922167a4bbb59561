fn main() {
    // TODO: parse the arguments
    println!("hello");
}
